"""Searching sorted sequences."""


def binary_search(items, target):
    """Return an index of ``target`` in the sorted list ``items``, or -1.

    >>> binary_search([1, 3, 5, 7, 9], 7)
    3
    >>> binary_search([1, 3, 5, 7, 9], 1)
    0
    >>> binary_search([1, 3, 5, 7, 9], 9)
    4
    >>> binary_search([1, 3, 5], 4)
    -1
    >>> binary_search([], 1)
    -1
    """
    low, high = 0, len(items) - 1
    while low <= high:
        middle = (low + high) // 2
        if items[middle] == target:
            return middle
        if items[middle] < target:
            low = middle + 1
        else:
            high = middle - 1
    return -1


def lower_bound(items, target):
    """Return the first index whose item is not less than ``target``.

    >>> lower_bound([1, 2, 2, 3], 2)
    1
    >>> lower_bound([1, 2, 2, 3], 4)
    4
    >>> lower_bound([1, 2, 2, 3], 0)
    0
    """
    low, high = 0, len(items)
    while low < high:
        middle = (low + high) // 2
        if items[middle] < target:
            low = middle + 1
        else:
            high = middle
    return low


def upper_bound(items, target):
    """Return the first index whose item is greater than ``target``.

    >>> upper_bound([1, 2, 2, 3], 2)
    3
    >>> upper_bound([1, 2, 2, 3], 3)
    4
    >>> upper_bound([1, 2, 2, 3], 0)
    0
    """
    low, high = 0, len(items)
    while low < high:
        middle = (low + high) // 2
        if items[middle] <= target:
            low = middle + 1
        else:
            high = middle
    return low


def count_in_range(items, low, high):
    """Count items of the sorted list that lie in the closed range [low, high].

    >>> count_in_range([1, 2, 2, 3, 5], 2, 3)
    3
    >>> count_in_range([1, 2, 2, 3, 5], 4, 4)
    0
    >>> count_in_range([1, 2, 2, 3, 5], 0, 10)
    5
    """
    return upper_bound(items, high) - lower_bound(items, low)


def find_peak(items):
    """Return the index of a largest item of a list that rises then falls.

    >>> find_peak([1, 3, 8, 4, 2])
    2
    >>> find_peak([5, 4, 3])
    0
    >>> find_peak([1, 2, 3])
    2
    """
    low, high = 0, len(items) - 1
    while low < high:
        middle = (low + high) // 2
        if items[middle] < items[middle + 1]:
            low = middle + 1
        else:
            high = middle
    return low
