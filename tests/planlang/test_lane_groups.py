"""Aggregate lanes: the difference-array bins hold exactly the time a bin-by-bin count finds."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planlang.lane_groups import bins_of, shares
from planlang.timeline import Lane

times = st.floats(0, 10, allow_nan=False)


@st.composite
def lanes(draw):
    out = []
    for worker in range(draw(st.integers(1, 6))):
        queued, start, end = sorted(draw(st.tuples(times, times, times)))
        waits = []
        if draw(st.booleans()):
            a, b = sorted(draw(st.tuples(st.floats(start, end), st.floats(start, end))))
            waits.append((a, b))
        status = draw(st.sampled_from(["done", "failed", "cached", "running"]))
        out.append(Lane(worker, "", "", "p", status, queued, start, end, waits))
    return out


def naive(group, end, bins):
    width = end / bins
    found = {}
    for lane in group:
        final = lane.status if lane.status != "running" else "done"
        spans = [("queued", lane.queued, lane.start), *(("waiting", a, b) for a, b in lane.waits),
                 (final, lane.start, lane.end)]  # fmt: skip
        for state, a, b in spans:
            cells = found.setdefault(state, [0.0] * bins)
            for i in range(bins):
                cells[i] += max(0.0, min(b, (i + 1) * width) - max(a, i * width))
    return found


@given(lanes(), st.integers(1, 40))
def test_bins_hold_what_a_bin_by_bin_count_finds(group, bins):
    end = max(lane.end for lane in group)
    if end <= 0:
        return
    fast, slow = shares(group, end, bins), naive(group, end, bins)
    for state in set(fast) | set(slow):
        got = fast.get(state, [0.0] * bins)
        assert got == pytest.approx(slow.get(state, [0.0] * bins), abs=1e-9), state


def test_a_wait_wins_its_bin_and_idle_bins_are_empty():
    group = [Lane(1, "", "", "p", "done", 0.0, 1.0, 4.0, [(2.0, 2.5)])]
    cells = bins_of(group, 8.0, 8)
    assert [c[0][0] if c else None for c in cells] == [
        "queued", "done", "waiting", "done", None, None, None, None,
    ]  # fmt: skip
    assert cells[1][0][1] == pytest.approx(1.0)
