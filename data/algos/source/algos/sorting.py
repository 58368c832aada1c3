"""Comparison and counting sorts on lists of numbers."""


def insertion_sort(items):
    """Return a sorted copy of ``items`` using insertion sort.

    Stable: equal items keep their order.

    >>> insertion_sort([3, 1, 2])
    [1, 2, 3]
    >>> insertion_sort([])
    []
    >>> insertion_sort([5, 4, 4, 1])
    [1, 4, 4, 5]
    >>> insertion_sort([2, 1])
    [1, 2]
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
    """Merge two sorted lists into one sorted list.

    >>> merge([1, 4, 9], [2, 3, 10])
    [1, 2, 3, 4, 9, 10]
    >>> merge([], [1])
    [1]
    >>> merge([1, 1], [1])
    [1, 1, 1]
    """
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
    """Return a sorted copy of ``items`` using merge sort.

    >>> merge_sort([5, 2, 4, 6, 1, 3])
    [1, 2, 3, 4, 5, 6]
    >>> merge_sort([1])
    [1]
    >>> merge_sort([2, 2, 1])
    [1, 2, 2]
    """
    if len(items) <= 1:
        return list(items)
    middle = len(items) // 2
    return merge(merge_sort(items[:middle]), merge_sort(items[middle:]))


def counting_sort(items, largest):
    """Sort non-negative integers no greater than ``largest`` by counting them.

    >>> counting_sort([3, 0, 2, 3, 1], 3)
    [0, 1, 2, 3, 3]
    >>> counting_sort([], 5)
    []
    >>> counting_sort([4, 4, 0], 4)
    [0, 4, 4]
    """
    counts = [0] * (largest + 1)
    for item in items:
        counts[item] += 1
    result = []
    for value in range(largest + 1):
        result.extend([value] * counts[value])
    return result


def is_sorted(items):
    """Tell whether ``items`` is in non-decreasing order.

    >>> is_sorted([1, 2, 2, 5])
    True
    >>> is_sorted([2, 1])
    False
    >>> is_sorted([])
    True
    """
    for i in range(len(items) - 1):
        if items[i] > items[i + 1]:
            return False
    return True
