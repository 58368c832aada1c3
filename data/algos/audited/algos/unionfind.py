"""Disjoint sets with union by size and path compression."""


class DisjointSets:
    """A partition of the items 0 .. n-1 into sets."""

    def __init__(self, n):
        self.parent = list(range(n))
        self.size = [1] * n
        self.count = n

    def find(self, item):
        """The representative of the set holding ``item``."""
        root = item
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[item] != root:
            self.parent[item], item = root, self.parent[item]
        return root

    def union(self, a, b):
        """Join the sets of ``a`` and ``b``; False when they were already one set."""
        root_a, root_b = self.find(a), self.find(b)
        if root_a == root_b:
            return False
        if self.size[root_a] < self.size[root_b]:
            root_a, root_b = root_b, root_a
        self.parent[root_b] = root_a
        self.size[root_a] += self.size[root_b]
        self.count += 1
        return True

    def connected(self, a, b):
        """Tell whether ``a`` and ``b`` are in the same set."""
        return self.find(a) == self.find(b)


def count_islands(edges, n):
    """Number of connected groups among n nodes joined by the given edges."""
    sets = DisjointSets(n)
    for a, b in edges:
        sets.union(a, b)
    return sets.count


def redundant_edge(edges, n):
    """The first edge that closes a cycle, or None."""
    sets = DisjointSets(n)
    for a, b in edges:
        if not sets.union(a, b):
            return (a, b)
    return None
