"""Array techniques: prefix sums, sliding windows, two pointers."""


def prefix_sums(values):
    """Running totals, starting with 0: result[i] is the sum of values[:i].

    >>> prefix_sums([1, 2, 3])
    [0, 1, 3, 6]
    >>> prefix_sums([])
    [0]
    >>> prefix_sums([5, -5])
    [0, 5, 0]
    """
    sums = [0]
    for value in values:
        sums.append(sums[-1] + value)
    return sums


def range_sum(sums, start, stop):
    """Sum of values[start:stop] from the table made by prefix_sums.

    >>> range_sum(prefix_sums([1, 2, 3, 4]), 1, 3)
    5
    >>> range_sum(prefix_sums([1, 2, 3, 4]), 0, 4)
    10
    >>> range_sum(prefix_sums([1, 2, 3, 4]), 2, 2)
    0
    """
    return sums[stop] - sums[start]


def max_subarray(values):
    """Largest sum of a non-empty contiguous run (Kadane's algorithm).

    >>> max_subarray([-2, 1, -3, 4, -1, 2, 1, -5, 4])
    6
    >>> max_subarray([-3, -1, -2])
    -1
    >>> max_subarray([5])
    5
    """
    best = current = values[0]
    for value in values[1:]:
        current = max(value, current + value)
        best = max(best, current)
    return best


def pair_with_sum(values, target):
    """Indices (i, j), i < j, of two items of a sorted list adding up to ``target``, or None.

    >>> pair_with_sum([1, 2, 4, 7, 11], 9)
    (1, 3)
    >>> pair_with_sum([1, 2, 3], 7) is None
    True
    >>> pair_with_sum([2, 2], 4)
    (0, 1)
    """
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
    """The list rotated right by ``steps`` places.

    >>> rotate([1, 2, 3, 4, 5], 2)
    [4, 5, 1, 2, 3]
    >>> rotate([1, 2, 3], 3)
    [1, 2, 3]
    >>> rotate([], 4)
    []
    """
    if not values:
        return []
    steps %= len(values)
    return values[-steps:] + values[:-steps] if steps else list(values)


def longest_window_at_most(values, limit):
    """Length of the longest run of non-negative values whose sum is at most ``limit``.

    >>> longest_window_at_most([1, 2, 1, 0, 1, 1, 0], 4)
    5
    >>> longest_window_at_most([5, 6], 4)
    0
    >>> longest_window_at_most([1, 1, 1], 3)
    3
    """
    best = total = start = 0
    for end, value in enumerate(values):
        total += value
        while total > limit:
            total -= values[start]
            start += 1
        best = max(best, end - start + 1)
    return best
