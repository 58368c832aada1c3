"""A binary min-heap stored in a list, as a class and as helper functions."""


class MinHeap:
    """A min-heap of comparable items.

    >>> heap = MinHeap([5, 3, 8])
    >>> len(heap)
    3
    """

    def __init__(self, items=()):
        self.items = []
        for item in items:
            self.push(item)

    def __len__(self):
        return len(self.items)

    def push(self, item):
        """Add an item, restoring the heap order upwards.

        >>> heap = MinHeap()
        >>> heap.push(4); heap.push(1); heap.push(3)
        >>> heap.items[0]
        1
        >>> heap.items
        [1, 4, 3]
        """
        self.items.append(item)
        child = len(self.items) - 1
        while child > 0:
            parent = (child - 1) // 2
            if self.items[parent] <= self.items[child]:
                break
            self.items[parent], self.items[child] = self.items[child], self.items[parent]
            child = parent

    def peek(self):
        """The smallest item, without removing it.

        >>> MinHeap([7, 2, 9]).peek()
        2
        >>> MinHeap([1]).peek()
        1
        >>> MinHeap([4, 4]).peek()
        4
        """
        return self.items[0]

    def pop(self):
        """Remove and return the smallest item.

        >>> heap = MinHeap([5, 1, 4, 2])
        >>> [heap.pop() for _ in range(4)]
        [1, 2, 4, 5]
        >>> MinHeap([3]).pop()
        3
        >>> heap = MinHeap([2, 9, 7])
        >>> heap.pop(), len(heap)
        (2, 2)
        """
        smallest = self.items[0]
        last = self.items.pop()
        if self.items:
            self.items[0] = last
            self._sift_down(0)
        return smallest

    def _sift_down(self, parent):
        size = len(self.items)
        while True:
            smallest = parent
            for child in (2 * parent + 1, 2 * parent + 2):
                if child < size and self.items[child] < self.items[smallest]:
                    smallest = child
            if smallest == parent:
                return
            self.items[parent], self.items[smallest] = self.items[smallest], self.items[parent]
            parent = smallest


def heap_sort(items):
    """Sorted copy of ``items`` by pushing all into a heap and popping them.

    >>> heap_sort([3, 1, 2])
    [1, 2, 3]
    >>> heap_sort([])
    []
    >>> heap_sort([2, 2, 1, 9, 0])
    [0, 1, 2, 2, 9]
    """
    heap = MinHeap(items)
    return [heap.pop() for _ in range(len(heap))]


def k_smallest(items, k):
    """The ``k`` smallest items in increasing order.

    >>> k_smallest([7, 1, 5, 3, 9], 3)
    [1, 3, 5]
    >>> k_smallest([4, 2], 5)
    [2, 4]
    >>> k_smallest([4, 2], 0)
    []
    """
    heap = MinHeap(items)
    count = min(k, len(heap))
    return [heap.pop() for _ in range(count)]
