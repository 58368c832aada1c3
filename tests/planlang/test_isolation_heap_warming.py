"""A ready plan process writes the heap pages a run would copy, a little at a time
(``heap_warming``), among the steps it runs while it waits (``child._warm_steps``)."""

from __future__ import annotations

import gc

from planlang.isolation import heap_warming
from planlang.isolation.pool import Pool
from planlang.isolation.testing import run_probe


def test_the_steps_free_all_they_made_and_make_little_the_collector_tracks() -> None:
    """Of the thousands of objects the steps hold at once, the collector tracks only the few
    long lists (thousands tracked would start collections, and one on a run's path if a run
    took the process meanwhile); the last step has freed them all."""
    made = tracked = 0
    try:
        for step in list(heap_warming.steps()):  # made whole first: as many whatever is held
            step()
            held = [item for part in heap_warming._held for item in part]
            made = max(made, len(held))
            tracked = max(tracked, sum(gc.is_tracked(item) for item in held))
    finally:
        heap_warming._held.clear()
    assert made > heap_warming.CHUNKS * heap_warming.CHUNK
    assert tracked <= 10
    assert heap_warming._held == []


def test_a_plan_process_runs_every_warming_step_under_its_confinement() -> None:
    """Each step a ready process runs works there, under its own root, landlock and seccomp:
    a warming step that fails (a module its fork server never imported, say) ends warming
    at once, silently, and every run after it pays the copies."""
    pool = Pool(1, probes=True)
    try:
        found = run_probe(pool, (
            "from planlang.isolation import child, heap_warming\n"
            "steps = list(child._warm_steps())\n"
            "for step in steps:\n"
            "    step()\n"
            "result = [len(steps), len(child._WARM_RUNS), len(heap_warming._held)]\n"
        ))  # fmt: skip
    finally:
        pool.close()
    steps, warm_runs, held = found
    assert steps > warm_runs - 1 + heap_warming.CHUNKS  # the warm-up plans, then the heap's
    assert held == 0
