"""Closed intervals given as (start, end) pairs with start <= end."""


def merge_intervals(intervals):
    """Merge overlapping or touching intervals; return them sorted."""
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def overlap(first, second):
    """Return the intersection of two intervals, or None if they are disjoint."""
    start = max(first[0], second[0])
    end = min(first[1], second[1])
    if start > end:
        return None
    return (start, end)


def covered_length(intervals):
    """Total length covered by the union of the intervals."""
    total = 0
    for start, end in merge_intervals(intervals):
        total += end - start
    return total


def contains_point(intervals, point):
    """Tell whether ``point`` lies in at least one interval."""
    for start, end in intervals:
        if start <= point <= end:
            return True
    return False


def max_overlap(intervals):
    """The largest number of intervals that share a common point."""
    events = []
    for start, end in intervals:
        events.append((start, 0))
        events.append((end, 1))
    best = current = 0
    for _, kind in sorted(events):
        if kind == 0:
            current += 1
            best = current
        else:
            current -= 1
    return best
