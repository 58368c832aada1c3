"""What the host holds for a plan under process isolation, and what it leaves behind.

A host word that calls plan functions back gathers their answers as decoded copies (in one
process they are one object): each large one is held to the run's budget while the host refers
to it (``queued.Queued.keep``). And a host that dies without its exit handlers leaves its
ready children's scratch directories behind: the next pool sweeps those of dead owners.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from planlang.errors import PlanLimitError
from planlang.isolation.pool import Pool
from planlang.isolation.sweep import PREFIX, _namespace, sweep
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits

ROOT = str(Path(__file__).resolve().parents[2])
BIG = "big = [str(i) for i in range(200000)]\n"  # about 1.3 MB as JSON, far past HELD_MIN


def _resident() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


def _box(host: dict[str, Any]) -> Sandbox:
    return Sandbox(host=host, limits=Limits(seconds=120, memory_mb=256), isolation="process")


@pytest.mark.parametrize("threaded", [False, True])
@pytest.mark.parametrize("thunk", ["lambda: big", "lambda: same(big)", "lambda: (big, 1)"])
def test_answers_a_host_word_gathers_are_held_to_the_runs_budget(
    thunk: str, threaded: bool
) -> None:
    """60 answers of a large list: one object in one process, 60 copies here, unbounded on
    main (865 MB resident on a 256 MB limit). Now the run ends on its memory limit, and the
    host neither grew past it nor lost anything. ``same(big)``: a tail's answer, which the
    host copies itself; ``(big, 1)``: one the codec decodes. ``threaded``: called back from
    threads of the word's own (lanes)."""
    peak = [0]
    start = _resident()

    def each(f: Any, n: int) -> int:
        out = []
        for _ in range(n):
            out.append(f())
            peak[0] = max(peak[0], _resident() - start)
        return len(out)

    def each_on_threads(f: Any, n: int) -> int:  # the callbacks go on lanes
        with ThreadPoolExecutor(4) as threads:
            return each(lambda: threads.submit(f).result(), n)

    box = _box({"each": each_on_threads if threaded else each, "same": lambda value: value})
    with pytest.raises(PlanLimitError) as ended:
        box.run(BIG + f"result = each({thunk}, 60)\n")
    assert ended.value.kind == "memory"
    assert peak[0] < 500 * 2**20, f"the host grew by {peak[0] >> 20} MB"
    assert box.run("result = 1 + 1\n") == 2  # the host and its pool carry on


def test_answers_the_host_drops_are_not_held() -> None:
    """An answer the host word lets go of is released: 60 large answers, one at a time,
    end as they do in one process."""

    def each(f: Any, n: int) -> int:
        return sum(len(f()) for _ in range(n))

    assert _box({"each": each}).run(BIG + "result = each(lambda: big, 60)\n") == 60 * 200000


def test_parallel_answers_freed_between_rounds_are_not_held() -> None:
    """Rounds of a fan-out each gathering large answers: what a round's word returned and
    the host dropped counts no more, so many rounds pass as in one process."""

    def fan(thunks: Any) -> int:  # on threads of its own: the callbacks go on lanes
        with ThreadPoolExecutor(4) as threads:
            return sum(len(answer) for answer in threads.map(lambda thunk: thunk(), thunks))

    source = BIG + "total = 0\nfor i in range(15):\n    total += fan([lambda: big] * 4)\n"
    source += "result = total\n"
    assert _box({"fan": fan}).run(source) == 15 * 4 * 200000


# A host that warms a pool of two children, says so, then dies as ``how`` says.
HOST = """
import os, signal, sys, time
from planlang.isolation.pool import Pool
pool = Pool(2)
pool.warm()
print(len(pool._ready), flush=True)
how = sys.argv[1]
if how == "exit":
    os._exit(0)
if how == "wait":
    sys.stdin.read()
    pool.close()
    sys.exit(0)
os.kill(os.getpid(), signal.SIGKILL if how == "kill" else signal.SIGTERM)
time.sleep(60)
"""


def _host(tmp_path: Path, how: str) -> subprocess.Popen[str]:
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": ROOT}
    return subprocess.Popen([sys.executable, "-c", HOST, how], env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip


def _scratch(tmp_path: Path) -> list[str]:
    return sorted(path.name for path in tmp_path.iterdir() if path.name.startswith(PREFIX))


@pytest.mark.parametrize("how", ["kill", "term", "exit"])
def test_scratch_directories_of_a_host_that_died_are_swept_by_the_next_pool(
    tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On main they stay in the temporary directory for good (hundreds on this machine)."""
    with _host(tmp_path, how) as host:
        assert host.stdout is not None
        assert host.stdout.readline().strip() == "2"
        host.wait(timeout=120)
    left = _scratch(tmp_path)
    assert len(left) >= 2  # the dead host's ready children's
    (tmp_path / left[0] / "written").write_text("a child wrote here")  # not empty: rm's
    with _host(tmp_path, "wait") as live:  # another host, running now
        assert live.stdout is not None
        assert live.stdout.readline().strip() == "2"
        try:
            theirs = set(_scratch(tmp_path)) - set(left)
            assert len(theirs) >= 2
            monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
            Pool(1).close()  # a pool's start sweeps
            assert _scratch(tmp_path) == sorted(theirs)  # the dead host's gone, the live one's kept
        finally:
            live.communicate("", timeout=120)
    assert _scratch(tmp_path) == []  # the live host removed its own at exit


def test_the_sweep_follows_no_link_and_takes_only_its_own_pattern(tmp_path: Path) -> None:
    """A link named like a dead host's directory is not followed; what matches none of our
    names, or is of another pid namespace, is left as it is."""
    dead = f"{PREFIX}{_namespace()}.{2**22 + 7}.1-"
    target = tmp_path / "target"
    target.mkdir()
    (target / "kept").write_text("")
    (tmp_path / f"{dead}link").symlink_to(target)
    (tmp_path / f"{dead}gone").mkdir()
    (tmp_path / f"{PREFIX}{(_namespace() or 0) + 1}.{2**22 + 7}.1-other").mkdir()
    (tmp_path / f"{PREFIX}abcdefgh").mkdir()  # the old name: no owner in it
    (tmp_path / f"{dead}gone.txt").mkdir()
    assert sweep(str(tmp_path)) == [str(tmp_path / f"{dead}gone")]
    assert (target / "kept").exists() and (tmp_path / f"{dead}link").is_symlink()
    assert len(_scratch(tmp_path)) == 4
