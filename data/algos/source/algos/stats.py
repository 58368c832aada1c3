"""Descriptive statistics of lists of numbers."""


def mean(values):
    """Arithmetic mean of a non-empty list.

    >>> mean([1, 2, 3, 4])
    2.5
    >>> mean([5])
    5.0
    >>> mean([-1, 1])
    0.0
    """
    return sum(values) / len(values)


def median(values):
    """Middle value of a non-empty list (mean of the two middle values if even).

    >>> median([3, 1, 2])
    2
    >>> median([4, 1, 3, 2])
    2.5
    >>> median([7])
    7
    """
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2 == 1:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def mode(values):
    """Most frequent value; the smallest one on a tie.

    >>> mode([1, 2, 2, 3])
    2
    >>> mode([4, 1, 4, 1])
    1
    >>> mode([9])
    9
    """
    counts = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    best = None
    for value in sorted(counts):
        if best is None or counts[value] > counts[best]:
            best = value
    return best


def variance(values):
    """Population variance of a non-empty list.

    >>> variance([1, 2, 3, 4])
    1.25
    >>> variance([5, 5])
    0.0
    >>> variance([0, 10])
    25.0
    """
    centre = mean(values)
    total = 0.0
    for value in values:
        total += (value - centre) ** 2
    return total / len(values)


def percentile(values, share):
    """Nearest-rank percentile: the smallest value with at least ``share`` percent at or below.

    >>> percentile([15, 20, 35, 40, 50], 40)
    20
    >>> percentile([15, 20, 35, 40, 50], 100)
    50
    >>> percentile([3, 1, 2], 1)
    1
    """
    ordered = sorted(values)
    rank = -(-share * len(ordered) // 100)
    return ordered[max(rank, 1) - 1]


def moving_average(values, window):
    """Means of every run of ``window`` consecutive values.

    >>> moving_average([1, 2, 3, 4, 5], 2)
    [1.5, 2.5, 3.5, 4.5]
    >>> moving_average([1, 2], 3)
    []
    >>> moving_average([4, 8, 6], 3)
    [6.0]
    """
    averages = []
    running = sum(values[:window])
    for end in range(window, len(values) + 1):
        if end > window:
            running += values[end - 1] - values[end - window - 1]
        averages.append(running / window)
    return averages
