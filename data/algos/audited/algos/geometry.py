"""Plane geometry on integer points given as (x, y) tuples."""


def manhattan(p, q):
    """Manhattan (taxicab) distance between two points."""
    return abs(p[0] - q[0]) + abs(p[1] - q[1])


def cross(o, a, b):
    """Z component of the cross product of vectors o->a and o->b."""
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def twice_area(polygon):
    """Twice the area of a simple polygon (shoelace formula), always non-negative."""
    total = 0
    for i in range(len(polygon)):
        x1, y1 = polygon[i]
        x2, y2 = polygon[(i + 1) % len(polygon)]
        total += x1 * y2 - x2 * y1
    return abs(total)


def in_rectangle(point, corner, opposite):
    """Tell whether ``point`` lies in the closed axis-aligned rectangle."""
    low_x, high_x = min(corner[0], opposite[0]), max(corner[0], opposite[0])
    low_y, high_y = min(corner[1], opposite[1]), max(corner[1], opposite[1])
    return low_x <= point[0] <= high_x and low_y <= point[1] <= high_y


def convex_hull(points):
    """Vertices of the convex hull in counter-clockwise order, from the lowest-leftmost point."""
    ordered = sorted(set(points))
    if len(ordered) <= 1:
        return ordered
    lower = []
    for point in ordered:
        while cross(lower[-2], lower[-1], point) <= 0:
            lower.pop()
        lower.append(point)
    upper = []
    for point in reversed(ordered):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], point) <= 0:
            upper.pop()
        upper.append(point)
    return lower[:-1] + upper[:-1]
