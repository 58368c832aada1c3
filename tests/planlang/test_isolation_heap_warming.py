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
    at once, silently, and every run after it pays the copies. The run may take the process
    before its own warming ended (on a loaded machine, as a run does): what that warming
    still held stays, so the steps are checked to free all they made, no more."""
    pool = Pool(1, probes=True)
    try:
        found = run_probe(pool, (
            "from planlang.isolation import child, heap_warming\n"
            "before = len(heap_warming._held)\n"
            "steps = list(child._warm_steps())\n"
            "for step in steps:\n"
            "    step()\n"
            "result = [len(steps), len(child._WARM_RUNS), before, len(heap_warming._held)]\n"
        ))  # fmt: skip
    finally:
        pool.close()
    steps, warm_runs, before, held = found
    assert steps > warm_runs - 1 + heap_warming.CHUNKS  # the warm-up plans, then the heap's
    assert held == before


WRITTEN_AHEAD = """
import os, struct, sys
from planlang.isolation import heap_warming
heap_warming.learn()
assert heap_warming._interpreter, "no writable segment of the interpreter found"
r, w = os.pipe()
pid = os.fork()
if pid == 0:  # a fork shares the segment until it writes it, as a plan process does
    def own(low, high):
        with open("/proc/self/pagemap", "rb") as pagemap:
            pagemap.seek(low // 4096 * 8)
            data = pagemap.read((high - low) // 4096 * 8)
        flags = struct.unpack(f"<{len(data) // 8}Q", data)
        return sum(1 for f in flags if f >> 63 and (f >> 56) & 1), len(flags)
    before = [own(*span) for span in heap_warming._interpreter]
    for step in heap_warming.steps():
        step()
    after = [own(*span) for span in heap_warming._interpreter]
    os.write(w, repr([before, after]).encode())
    os._exit(0)
os.waitpid(pid, 0)
print(os.read(r, 100000).decode())
"""


def test_the_interpreters_writable_pages_are_written_ahead_in_a_fork() -> None:
    """In a fork of a process that learned where the interpreter's writable segment is, the
    steps leave every page of it the fork's own (a run then copies none of them)."""
    import ast
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", WRITTEN_AHEAD], capture_output=True,
                          text=True, timeout=120, check=True)  # fmt: skip
    before, after = ast.literal_eval(done.stdout.strip())
    assert sum(own for own, _ in before) < sum(total for _, total in before)  # shared at first
    assert after == [(total, total) for _, total in before]
