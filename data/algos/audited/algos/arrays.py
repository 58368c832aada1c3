"""Array techniques: prefix sums, sliding windows, two pointers."""


def prefix_sums(values):
    """Running totals, starting with 0: result[i] is the sum of values[:i]."""
    sums = [0]
    for value in values:
        sums.append(sums[-1] + value)
    return sums


def range_sum(sums, start, stop):
    """Sum of values[start:stop] from the table made by prefix_sums."""
    return sums[stop] - sums[start]


def max_subarray(values):
    """Largest sum of a non-empty contiguous run (Kadane's algorithm)."""
    best = current = values[0]
    for value in values[1:]:
        current = max(value, current + value)
        best = max(best, current)
    return best


def pair_with_sum(values, target):
    """Indices (i, j), i < j, of two items of a sorted list adding up to ``target``, or None."""
    left, right = 0, len(values) - 1
    while left < right:
        total = values[left] + values[right]
        if total == target:
            return (left, right)
        if total < target:
            left += 1
        else:
            right -= 1
    return None


def rotate(values, steps):
    """The list rotated right by ``steps`` places."""
    if not values:
        return []
    steps %= len(values)
    return values[-steps:] + values[:-steps] if steps else list(values)


def longest_window_at_most(values, limit):
    """Length of the longest run of non-negative values whose sum is at most ``limit``."""
    best = total = start = 0
    for end, value in enumerate(values):
        total += value
        while total > limit:
            total -= values[start]
            start += 1
        best = max(best, end - start + 1)
    return best
