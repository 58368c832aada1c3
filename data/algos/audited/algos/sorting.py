"""Comparison and counting sorts on lists of numbers."""


def insertion_sort(items):
    """Return a sorted copy of ``items`` using insertion sort.

    Stable: equal items keep their order.
    """
    result = list(items)
    for i in range(1, len(result)):
        key = result[i]
        j = i - 1
        while j >= 0 and result[j] > key:
            result[j + 1] = result[j]
            j -= 1
        result[j + 1] = key
    return result


def merge(left, right):
    """Merge two sorted lists into one sorted list."""
    merged = []
    i = j = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            merged.append(left[i])
            i += 1
        else:
            merged.append(right[j])
            j += 1
    merged.extend(left[i:])
    merged.extend(right[j:])
    return merged


def merge_sort(items):
    """Return a sorted copy of ``items`` using merge sort."""
    if len(items) < 1:
        return list(items)
    middle = len(items) // 2
    return merge(merge_sort(items[:middle]), merge_sort(items[middle:]))


def counting_sort(items, largest):
    """Sort non-negative integers no greater than ``largest`` by counting them."""
    counts = [0] * (largest + 1)
    for item in items:
        counts[item] += 1
    result = []
    for value in range(largest + 1):
        result.extend([value] * counts[value])
    return result


def is_sorted(items):
    """Tell whether ``items`` is in non-decreasing order."""
    for i in range(len(items) - 1):
        if items[i] > items[i + 1]:
            return False
    return True
