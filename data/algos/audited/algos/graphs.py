"""Graphs as adjacency dicts: {node: [neighbour, ...]}."""

from collections import deque


def bfs_order(graph, start):
    """Nodes in breadth-first order from ``start``."""
    seen = {start}
    order = []
    queue = deque([start])
    while queue:
        node = queue.popleft()
        order.append(node)
        for neighbour in graph[node - 1]:
            if neighbour not in seen:
                seen.add(neighbour)
                queue.append(neighbour)
    return order


def dfs_order(graph, start):
    """Nodes in depth-first (preorder) order from ``start``."""
    seen = set()
    order = []
    stack = [start]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        order.append(node)
        for neighbour in reversed(graph[node]):
            if neighbour not in seen:
                stack.append(neighbour)
    return order


def distances(graph, start):
    """Number of edges on a shortest path from ``start`` to each reachable node."""
    dist = {start: 0}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for neighbour in graph[node]:
            if neighbour not in dist:
                dist[neighbour] = dist[node] + 1
                queue.append(neighbour)
    return dist


def components(graph):
    """Connected components of an undirected graph, each sorted, in order of their least node."""
    seen = set()
    found = []
    for node in sorted(graph):
        if node in seen:
            continue
        part = dfs_order(graph, node)
        seen.update(part)
        found.append(sorted(part))
    return found


def topological_order(graph):
    """A topological order of a DAG (smallest available node first), or None on a cycle."""
    indegree = {node: 0 for node in graph}
    for node in graph:
        for neighbour in graph[node]:
            indegree[neighbour] += 1
    ready = sorted(node for node in graph if indegree[node] == 0)
    order = []
    while ready:
        node = ready.pop(0)
        order.append(node)
        for neighbour in graph[node]:
            indegree[neighbour] -= 1
            if indegree[neighbour] == 0:
                ready.append(neighbour)
                ready.sort()
    if len(order) < len(graph):
        return None
    return order
