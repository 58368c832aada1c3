"""Disjoint sets with union by size and path compression."""


class DisjointSets:
    """A partition of the items 0 .. n-1 into sets.

    >>> sets = DisjointSets(4)
    >>> sets.count
    4
    """

    def __init__(self, n):
        self.parent = list(range(n))
        self.size = [1] * n
        self.count = n

    def find(self, item):
        """The representative of the set holding ``item``.

        >>> sets = DisjointSets(3)
        >>> sets.find(2)
        2
        >>> sets.union(0, 2)
        True
        >>> sets.find(2) == sets.find(0)
        True
        """
        root = item
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[item] != root:
            self.parent[item], item = root, self.parent[item]
        return root

    def union(self, a, b):
        """Join the sets of ``a`` and ``b``; False when they were already one set.

        >>> sets = DisjointSets(5)
        >>> sets.union(0, 1), sets.union(1, 0)
        (True, False)
        >>> sets.union(3, 4), sets.count
        (True, 3)
        >>> sets.size[sets.find(4)]
        2
        """
        root_a, root_b = self.find(a), self.find(b)
        if root_a == root_b:
            return False
        if self.size[root_a] < self.size[root_b]:
            root_a, root_b = root_b, root_a
        self.parent[root_b] = root_a
        self.size[root_a] += self.size[root_b]
        self.count -= 1
        return True

    def connected(self, a, b):
        """Tell whether ``a`` and ``b`` are in the same set.

        >>> sets = DisjointSets(3)
        >>> sets.connected(0, 1)
        False
        >>> sets.union(0, 1)
        True
        >>> sets.connected(1, 0)
        True
        """
        return self.find(a) == self.find(b)


def count_islands(edges, n):
    """Number of connected groups among n nodes joined by the given edges.

    >>> count_islands([(0, 1), (2, 3)], 5)
    3
    >>> count_islands([], 2)
    2
    >>> count_islands([(0, 1), (1, 2), (2, 0)], 3)
    1
    """
    sets = DisjointSets(n)
    for a, b in edges:
        sets.union(a, b)
    return sets.count


def redundant_edge(edges, n):
    """The first edge that closes a cycle, or None.

    >>> redundant_edge([(0, 1), (1, 2), (2, 0), (2, 3)], 4)
    (2, 0)
    >>> redundant_edge([(0, 1)], 2) is None
    True
    >>> redundant_edge([(0, 1), (0, 1)], 2)
    (0, 1)
    """
    sets = DisjointSets(n)
    for a, b in edges:
        if not sets.union(a, b):
            return (a, b)
    return None
