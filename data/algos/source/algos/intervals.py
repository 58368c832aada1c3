"""Closed intervals given as (start, end) pairs with start <= end."""


def merge_intervals(intervals):
    """Merge overlapping or touching intervals; return them sorted.

    >>> merge_intervals([(1, 3), (2, 6), (8, 10)])
    [(1, 6), (8, 10)]
    >>> merge_intervals([(1, 4), (4, 5)])
    [(1, 5)]
    >>> merge_intervals([])
    []
    >>> merge_intervals([(5, 7), (1, 2)])
    [(1, 2), (5, 7)]
    """
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def overlap(first, second):
    """Return the intersection of two intervals, or None if they are disjoint.

    >>> overlap((1, 5), (3, 8))
    (3, 5)
    >>> overlap((1, 2), (2, 4))
    (2, 2)
    >>> overlap((1, 2), (3, 4)) is None
    True
    """
    start = max(first[0], second[0])
    end = min(first[1], second[1])
    if start > end:
        return None
    return (start, end)


def covered_length(intervals):
    """Total length covered by the union of the intervals.

    >>> covered_length([(1, 3), (2, 5), (7, 8)])
    5
    >>> covered_length([])
    0
    >>> covered_length([(0, 10), (2, 3)])
    10
    """
    total = 0
    for start, end in merge_intervals(intervals):
        total += end - start
    return total


def contains_point(intervals, point):
    """Tell whether ``point`` lies in at least one interval.

    >>> contains_point([(1, 3), (5, 6)], 3)
    True
    >>> contains_point([(1, 3), (5, 6)], 4)
    False
    >>> contains_point([], 0)
    False
    """
    for start, end in intervals:
        if start <= point <= end:
            return True
    return False


def max_overlap(intervals):
    """The largest number of intervals that share a common point.

    >>> max_overlap([(1, 4), (2, 5), (7, 9)])
    2
    >>> max_overlap([(1, 2), (2, 3)])
    2
    >>> max_overlap([])
    0
    """
    events = []
    for start, end in intervals:
        events.append((start, 0))
        events.append((end, 1))
    best = current = 0
    for _, kind in sorted(events):
        if kind == 0:
            current += 1
            best = max(best, current)
        else:
            current -= 1
    return best
