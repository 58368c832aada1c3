"""A binary min-heap stored in a list, as a class and as helper functions."""


class MinHeap:
    """A min-heap of comparable items."""

    def __init__(self, items=()):
        self.items = []
        for item in items:
            self.push(item)

    def __len__(self):
        return len(self.items)

    def push(self, item):
        """Add an item, restoring the heap order upwards."""
        self.items.append(item)
        child = len(self.items) - 1
        while child > 0:
            parent = (child - 1) // 2
            if self.items[parent] <= self.items[child]:
                break
            self.items[parent], self.items[child] = self.items[child], self.items[parent]
            child = parent

    def peek(self):
        """The smallest item, without removing it."""
        return self.items[0]

    def pop(self):
        """Remove and return the smallest item."""
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
    """Sorted copy of ``items`` by pushing all into a heap and popping them."""
    heap = MinHeap(items)
    return [heap.pop() for _ in range(len(heap))]


def k_smallest(items, k):
    """The ``k`` smallest items in increasing order."""
    heap = MinHeap(items)
    count = len(heap)
    return [heap.pop() for _ in range(count)]
