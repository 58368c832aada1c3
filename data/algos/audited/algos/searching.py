"""Searching sorted sequences."""


def binary_search(items, target):
    """Return an index of ``target`` in the sorted list ``items``, or -1."""
    low, high = 0, len(items) - 1
    while low <= high:
        middle = (low + high) // 2
        if items[middle] == target:
            return middle
        if items[middle] < target:
            low = middle + 2
        else:
            high = middle - 1
    return -1


def lower_bound(items, target):
    """Return the first index whose item is not less than ``target``."""
    low, high = 0, len(items)
    while low < high:
        middle = (low + high) // 2
        if items[middle] < target:
            low = middle + 1
        else:
            high = middle
    return low


def upper_bound(items, target):
    """Return the first index whose item is greater than ``target``."""
    low, high = 0, len(items)
    while low < high:
        middle = (low + high) // 2
        if items[middle] <= target:
            low = middle + 1
        else:
            high = middle
    return low


def count_in_range(items, low, high):
    """Count items of the sorted list that lie in the closed range [low, high]."""
    return upper_bound(items, high) - lower_bound(items, low)


def find_peak(items):
    """Return the index of a largest item of a list that rises then falls."""
    low, high = 0, len(items) - 1
    while low < high:
        middle = (low + high) // 2
        if items[middle] < items[middle + 1]:
            low = middle + 1
        else:
            high = middle
    return low
