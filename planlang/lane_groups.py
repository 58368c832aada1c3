"""Aggregate lanes: many workers drawn as one lane of time bins.

Past a threshold a page cannot draw one lane per worker and stay small and quick, so
consecutive workers of a phase share a lane; each time bin shows the state that held most of
their time in it (a wait at the budget, what a person looks for, wins its bin) and how busy the
group was then.
"""

from __future__ import annotations

import math
from collections import defaultdict

from planlang.timeline import Lane

__all__ = ["bins_of", "shares"]


def shares(lanes: list[Lane], end: float, bins: int) -> dict[str, list[float]]:
    """Seconds each state held the lanes in each of ``bins`` equal bins of ``[0, end]``.

    A span's partial first and last bins get their overlap; the whole bins between them go
    through a difference array (one add at each end), so a long span costs two steps, not one
    per bin it covers.
    """
    width = end / bins if end > 0 else 1.0
    share: dict[str, list[float]] = defaultdict(lambda: [0.0] * bins)
    whole: dict[str, list[float]] = defaultdict(lambda: [0.0] * (bins + 1))
    for lane in lanes:
        final = lane.status if lane.status != "running" else "done"
        spans = [("queued", lane.queued, lane.start)]
        spans += [("waiting", a, b) for a, b in lane.waits]
        spans.append((final, lane.start, lane.end))
        for state, a, b in spans:
            if b <= a:
                continue
            first = max(0, min(bins - 1, int(a / width)))
            last = max(0, min(bins - 1, int(math.ceil(b / width)) - 1))
            cells = share[state]
            if first == last:
                cells[first] += b - a
                continue
            cells[first] += (first + 1) * width - a
            cells[last] += b - last * width
            if last > first + 1:
                marks = whole[state]
                marks[first + 1] += width
                marks[last] -= width
    for state, marks in whole.items():
        running, cells = 0.0, share[state]
        for i in range(bins):
            running += marks[i]
            cells[i] += running
    return dict(share)


def bins_of(lanes: list[Lane], end: float, bins: int) -> list[list[tuple[str, float]]]:
    """For an aggregate lane: per time bin, the dominant state and how busy the bin was."""
    width = end / bins if end > 0 else 1.0
    share = shares(lanes, end, bins)
    out: list[list[tuple[str, float]]] = []
    capacity = width * max(len(lanes), 1)
    for i in range(bins):
        cell = {state: cells[i] for state, cells in share.items() if cells[i] > 1e-12}
        if not cell:
            out.append([])
            continue
        if cell.get("waiting"):  # a wait is what a person looks for: it wins its bin
            state = "waiting"
        else:
            state = max(cell, key=lambda s: cell[s])
        out.append([(state, min(1.0, sum(cell.values()) / capacity))])
    return out
