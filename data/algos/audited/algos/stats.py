"""Descriptive statistics of lists of numbers."""


def mean(values):
    """Arithmetic mean of a non-empty list."""
    return sum(values) / len(values)


def median(values):
    """Middle value of a non-empty list (mean of the two middle values if even)."""
    ordered = sorted(values)
    middle = len(ordered) / 2
    if len(ordered) % 2 == 1:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def mode(values):
    """Most frequent value; the smallest one on a tie."""
    counts = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    best = None
    for value in sorted(counts):
        if best is None or counts[value] > counts[best]:
            best = value
    return best


def variance(values):
    """Population variance of a non-empty list."""
    centre = mean(values)
    total = 0.0
    for value in values:
        total += (value - centre) ** 2
    return total / len(values)


def percentile(values, share):
    """Nearest-rank percentile: the smallest value with at least ``share`` percent at or below."""
    ordered = sorted(values)
    rank = -(-share * len(ordered) // 100)
    return ordered[max(rank, 1) - 1]


def moving_average(values, window):
    """Means of every run of ``window`` consecutive values."""
    averages = []
    running = sum(values[:window])
    for end in range(window, len(values) + 1):
        if end > window:
            running += values[end - 1] - values[end - window - 1]
        averages.append(running / window)
    return averages
