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

__all__ = ["bins_of"]


def bins_of(lanes: list[Lane], end: float, bins: int) -> list[list[tuple[str, float]]]:
    """For an aggregate lane: per time bin, the dominant state and how busy the bin was."""
    width = end / bins if end > 0 else 1.0
    share: list[dict[str, float]] = [defaultdict(float) for _ in range(bins)]
    for lane in lanes:
        final = lane.status if lane.status != "running" else "done"
        spans = [("queued", lane.queued, lane.start)]
        spans += [("waiting", a, b) for a, b in lane.waits]
        spans.append((final, lane.start, lane.end))
        for state, a, b in spans:
            if b <= a:
                continue
            first, last = int(a / width), min(bins - 1, int(math.ceil(b / width)) - 1)
            for i in range(max(0, first), last + 1):
                overlap = min(b, (i + 1) * width) - max(a, i * width)
                if overlap > 0:
                    share[i][state] += overlap
    out: list[list[tuple[str, float]]] = []
    for cell in share:
        if not cell:
            out.append([])
            continue
        if cell.get("waiting"):  # a wait is what a person looks for: it wins its bin
            state = "waiting"
        else:
            state = max(cell, key=lambda s: cell[s])
        out.append([(state, min(1.0, sum(cell.values()) / (width * max(len(lanes), 1))))])
    return out
