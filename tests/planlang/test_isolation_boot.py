"""The fork server's start (planlang.isolation.boot): the main thread's stack limit raised
where it may be, and left alone where it may not (plans then run on a thread of their own)."""

from __future__ import annotations

import os
import resource
import sys
from pathlib import Path
from typing import Any

import pytest

import planlang
from planlang.isolation import boot
from planlang.isolation.pool import Pool
from planlang.isolation.testing import run_probe

MiB = 2**20


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    state: dict[str, Any] = {"now": (8 * MiB, resource.RLIM_INFINITY), "set": None}
    monkeypatch.setattr(resource, "getrlimit", lambda which: state["now"])
    monkeypatch.setattr(resource, "setrlimit", lambda which, value: state.update(set=value))
    return state


def test_a_lower_stack_limit_is_raised_and_the_server_starts_again(limits) -> None:  # type: ignore[no-untyped-def]
    assert boot._raised({"stack": 1088 * MiB}) is True
    assert limits["set"] == (1088 * MiB, resource.RLIM_INFINITY)


@pytest.mark.parametrize(
    ("now", "config"),
    [
        ((8 * MiB, 16 * MiB), {"stack": 1088 * MiB}),  # the hard limit is too low
        ((2048 * MiB, resource.RLIM_INFINITY), {"stack": 1088 * MiB}),  # high enough already
        ((resource.RLIM_INFINITY, resource.RLIM_INFINITY), {"stack": 1088 * MiB}),
        ((8 * MiB, resource.RLIM_INFINITY), {"stack": 1088 * MiB, "again": True}),  # once only
        ((8 * MiB, resource.RLIM_INFINITY), {}),
    ],
    ids=["hard-limit-too-low", "high-enough", "unlimited", "started-again-already", "not-asked"],
)
def test_the_stack_limit_is_left_alone(limits, now, config) -> None:  # type: ignore[no-untyped-def]
    limits["now"] = now
    assert boot._raised(config) is False
    assert limits["set"] is None


def test_the_fork_server_runs_the_hosts_planlang_whatever_its_path(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """An editable install finds planlang by a finder of its own, not by ``sys.path``: the
    fork server, started without ``site`` (so without that finder, and without the modules
    other ``.pth`` files import), imports the planlang its boot.py belongs to, the host's,
    not another one found on the path or by a finder first."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(planlang.__file__)))
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p and os.path.abspath(p) != root])
    pool = Pool(1, probes=True)
    try:
        found = run_probe(pool, "import planlang\nresult = planlang.__file__\n")
    finally:
        pool.close()
    assert Path(found).resolve() == Path(planlang.__file__).resolve()


def test_a_fork_server_with_a_thread_forks_as_os_fork_does(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The server forks without Python's at-fork hooks only while it is single-threaded:
    should a thread have started in it after all, it forks with os.fork, which mends the
    interpreter's locks and thread states in the child."""
    import ctypes

    from planlang.isolation import zygote

    forked: list[str] = []

    class Libc:  # libc's fork, as the server would call it (never this test's process)
        def __init__(self, *args: Any, **options: Any) -> None:
            self.fork = lambda: forked.append("libc") or 1234

    monkeypatch.setattr(ctypes, "PyDLL", Libc)
    monkeypatch.setattr(os, "fork", lambda: forked.append("os.fork") or 4321)
    single = zygote._quiet_fork()
    monkeypatch.setattr(zygote._thread, "_count", lambda: 0)  # this test's process has some
    assert single() == 1234  # single-threaded: libc's
    monkeypatch.setattr(zygote._thread, "_count", lambda: 1)
    assert single() == 4321
    assert forked == ["libc", "os.fork"]
