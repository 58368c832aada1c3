"""The operating system's layers, tested as if the language layer had already failed.

A test-only probe (``planlang.isolation.testing``; no plan can reach it) runs raw Python in a
confined child and tries what a sandbox escape would try next: connect to a port this test
listens on at 127.0.0.1, write a file outside the scratch directory, read the host's API key
from the environment, start a process. Each layer is tested on its own: the others are left
out of the child, and kernel layers are tested with the audit hook switched off by the probe
itself (raw Python can do that; that is why the hook is the last layer, not the only one).
Where this machine lacks a layer the test says so and skips; it never passes silently.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import planlang.isolation
from planlang.isolation.pool import Pool
from planlang.isolation.testing import run_probe
from planlang.sandbox import deep_stack

KERNEL = ("network namespace", "landlock", "seccomp")
HOOK_OFF = "from planlang.isolation import confine\nconfine._state['strict'] = False\n"


def attempt(body: str) -> str:
    """A probe that reports 'blocked: ...' or 'done' (raw Python, indented into a try)."""
    indented = "".join(f"    {line}\n" for line in body.strip().splitlines())
    return (
        "try:\n" + indented + "    result = 'done'\n"
        "except BaseException as error:\n    result = f'blocked: {type(error).__name__}: {error}'\n"
    )


@pytest.fixture(scope="module")
def pools() -> Iterator[dict[tuple[str, ...], Pool]]:
    made: dict[tuple[str, ...], Pool] = {}
    yield made
    for pool in made.values():
        pool.close()


def probe(
    pools: dict[tuple[str, ...], Pool], keep: tuple[str, ...], source: str, also: str = ""
) -> str:
    """Run ``source`` in a child that has only the kernel layers in ``keep`` (each must be
    reported active, and so must ``also``). Its own root is left out unless kept: no host
    path resolves under it, so no other layer would be tested at all."""
    without = tuple(layer for layer in (*KERNEL, "own root") if layer not in keep)
    pool = pools.get(without)
    if pool is None:
        pool = pools[without] = Pool(1, probes=True, without=without)
    active = {name: (on, detail) for name, on, detail in pool.layers()}
    for layer in (*keep, also) if also else keep:
        on, detail = active[layer]
        if not on:
            pytest.skip(f"the {layer} layer is not active on this machine: {detail}")
    return str(run_probe(pool, source))


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.3)
    yield server
    server.close()


def connect_source(port: int) -> str:
    return attempt(f"import socket\ns = socket.socket()\ns.settimeout(3)\n"
                   f"s.connect(('127.0.0.1', {port}))\n")  # fmt: skip


def assert_nobody_connected(server: socket.socket) -> None:
    with pytest.raises(TimeoutError):
        server.accept()


def test_every_layer_is_reported_with_what_it_does() -> None:
    layers = planlang.isolation.layers()
    names = [layer["name"] for layer in layers]
    for name in ("process", "environment", "own uid", "user namespace", "IPC namespace",
                 "scratch quota", "own root", "keyring", *KERNEL, "audit hook",
                 "resource limits"):  # fmt: skip
        assert name in names
    assert all(layer["detail"] for layer in layers)  # a missing layer says why


@pytest.mark.parametrize("layer", KERNEL)
def test_no_connection_leaves_the_child(pools, listener, layer) -> None:  # type: ignore[no-untyped-def]
    port = listener.getsockname()[1]
    outcome = probe(pools, (layer,), HOOK_OFF + connect_source(port))
    assert outcome.startswith("blocked"), outcome
    assert_nobody_connected(listener)


def test_the_audit_hook_alone_refuses_a_socket(pools, listener) -> None:  # type: ignore[no-untyped-def]
    outcome = probe(pools, (), connect_source(listener.getsockname()[1]))
    assert outcome.startswith("blocked: PermissionError") and "audit hook" in outcome, outcome
    assert_nobody_connected(listener)


def test_no_file_is_written_outside_the_scratch_directory(pools, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "pwned.txt"
    write = attempt(f"open({str(target)!r}, 'w').write('x')")
    assert probe(pools, ("landlock",), HOOK_OFF + write).startswith("blocked")
    assert probe(pools, (), write).startswith("blocked: PermissionError")  # the hook alone
    assert not target.exists()
    inside = attempt("open('scratch.txt', 'w').write('ok')")  # the scratch directory is fine
    assert probe(pools, ("landlock",), HOOK_OFF + inside) == "done"


def test_the_hosts_api_key_never_reaches_the_child(pools, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LLM_API_KEY", "sk-test-not-a-real-key")
    for pool in pools.values():  # children made from here on start under this environment
        pool.close()
    pools.clear()
    try:
        seen = probe(pools, KERNEL, HOOK_OFF + "import os\nresult = sorted(os.environ)\n")
        assert "LLM_API_KEY" not in seen
        parent = attempt(f"open('/proc/{os.getpid()}/environ', 'rb').read()")  # the host's
        # the user namespace (entered with the network one) holds no right over the host
        assert probe(pools, ("network namespace",), HOOK_OFF + parent, also="user namespace"
                     ).startswith("blocked")  # fmt: skip
        assert probe(pools, (), parent).startswith("blocked: PermissionError")
    finally:
        for pool in pools.values():
            pool.close()
        pools.clear()


@pytest.mark.parametrize("layer", ["seccomp", "landlock"])
def test_no_process_can_be_started(pools, tmp_path: Path, layer: str) -> None:  # type: ignore[no-untyped-def]
    marker = tmp_path / "spawned"
    spawn = attempt(f"import subprocess\nsubprocess.run(['/bin/touch', {str(marker)!r}])")
    assert probe(pools, (layer,), HOOK_OFF + spawn).startswith("blocked")
    assert probe(pools, (), spawn).startswith("blocked: PermissionError")  # the hook alone
    assert not marker.exists()
    if layer == "seccomp":
        fork = attempt("import os\npid = os.fork()\nif pid == 0:\n    os._exit(0)")
        assert probe(pools, (layer,), HOOK_OFF + fork).startswith("blocked")
    assert os.environ.get("PLANLANG_PROBE") is None


def _doctor(isolation: str | None, *options: str) -> subprocess.CompletedProcess[str]:
    """``planlang doctor`` as a user runs it, under ``isolation`` (None: the default)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    env.pop("PLANLANG_ISOLATION", None)
    if isolation is not None:
        env["PLANLANG_ISOLATION"] = isolation
    command = [sys.executable, "-m", "planlang", "doctor", *options]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120,
                          check=False)  # fmt: skip


def test_planlang_doctor_prints_each_layer_and_the_isolation() -> None:
    done = _doctor(None, "--json")
    report = json.loads(done.stdout)
    assert report["isolation"] == "process"
    names = {layer["name"] for layer in report["layers"]}
    assert {"network namespace", "seccomp", "landlock", "audit hook"} <= names
    missing = [layer for layer in report["layers"] if not layer["active"]]
    assert done.returncode == (1 if missing else 0), done.stderr


def test_no_file_of_the_host_is_read(pools, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A project's .env (an API key in a file) is out of reach: only the code the child runs
    may be read."""
    secret = tmp_path / ".env"
    secret.write_text("LLM_API_KEY=sk-test-not-a-real-key\n")
    read = attempt(f"open({str(secret)!r}).read()")
    assert probe(pools, ("landlock",), HOOK_OFF + read).startswith("blocked")
    listing = attempt(f"import os\nos.listdir({str(tmp_path)!r})")
    assert probe(pools, ("landlock",), HOOK_OFF + listing).startswith("blocked")
    code = attempt("import json\nresult = json.dumps([1])")  # its own code: still readable
    assert probe(pools, ("landlock",), HOOK_OFF + code) == "done"


def test_the_memory_meter_reads_its_own_process_under_every_layer(pools) -> None:  # type: ignore[no-untyped-def]
    """The meter's precise reading (its own /proc/self/statm) works in a confined child: a
    fork server that granted its own /proc entry instead left every child on the coarse
    fallback (the peak, from getrusage), and opening the file at each checkpoint."""
    source = (
        "import os\nfrom planlang.sandbox import limits\n"
        "limits._forget_statm()\nlimits._resident_bytes()\nfd = limits._statm[0]\n"
        "result = fd >= 0 and os.fstat(fd).st_ino == os.stat('/proc/self/statm').st_ino\n"
    )
    assert probe(pools, KERNEL, source) == "True"


def test_a_plan_process_never_meters_the_fork_servers_memory(pools) -> None:  # type: ignore[no-untyped-def]
    """The meter's /proc/self/statm, which the fork server opened as it warmed up, is the
    server's: each fork forgets it (the server forks without Python's at-fork hooks and runs
    planlang's own), so a plan's memory is counted in its own process."""
    source = (
        "import os\nfrom planlang.sandbox import limits\nfd = limits._statm[0]\n"
        "result = fd < 0 or os.fstat(fd).st_ino == os.stat('/proc/self/statm').st_ino\n"
    )
    assert probe(pools, KERNEL, source) == "True"


def test_the_resource_limits_hold_where_the_plan_runs(pools) -> None:  # type: ignore[no-untyped-def]
    """Open files, file size and core dumps are limited before the child says ready, CPU
    seconds and address space when its run arrives: all of them, hard, when the plan runs,
    and none can be raised again (the hook off: the kernel itself refuses)."""
    source = (
        "import resource\n"
        "names = ('NOFILE', 'FSIZE', 'CORE', 'CPU', 'AS')\n"
        "limits = {n: resource.getrlimit(getattr(resource, 'RLIMIT_' + n)) for n in names}\n"
        "try:\n"
        "    resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))\n"
        "    raised = 'raised'\n"
        "except (OSError, ValueError) as error:\n"
        "    raised = str(error)\n"
        "result = [limits, raised]\n"
    )
    outcome = probe(pools, KERNEL, HOOK_OFF + source)
    limits, raised = eval(outcome)  # noqa: S307 - the repr of the probe's own plain data
    assert limits["NOFILE"] == (64, 64)
    assert limits["FSIZE"] == (2**24, 2**24)
    assert limits["CORE"] == (0, 0)
    for name in ("CPU", "AS"):
        soft, hard = limits[name]
        assert hard != resource.RLIM_INFINITY and 0 < soft <= hard, (name, limits[name])
    assert raised == "not allowed to raise maximum limit"  # CPython's words for EPERM


def test_each_run_has_a_process_of_its_own(pools) -> None:  # type: ignore[no-untyped-def]
    """A child serves one run: what one run leaves in its process (a module's global, a
    file in its scratch directory) is not there for the next, which runs in another process."""
    leave = (
        "import os\nimport planlang\nplanlang.left_behind = os.getpid()\n"
        "open('left.txt', 'w').write('x')\nresult = [os.getpid(), os.getcwd()]\n"
    )
    look = (
        "import os\nimport planlang\n"
        "result = [os.getpid(), os.getcwd(), getattr(planlang, 'left_behind', None),"
        " os.path.exists('left.txt')]\n"
    )
    first_pid, first_scratch = eval(probe(pools, KERNEL, HOOK_OFF + leave))  # noqa: S307
    pid, scratch, left, exists = eval(probe(pools, KERNEL, HOOK_OFF + look))  # noqa: S307
    assert pid != first_pid and scratch != first_scratch
    assert left is None and exists is False
    # a hang guard: a finished child is discarded off the run, so the first's removal may
    # still be under way when a second run that found its process ready has ended
    deadline = time.monotonic() + 60
    while os.path.exists(first_scratch) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not os.path.exists(first_scratch)  # the first child's scratch is gone
    while os.path.exists(scratch) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not os.path.exists(scratch)  # and the second's, which it left empty


def test_a_plan_runs_on_its_process_main_thread_with_the_deep_stack(pools) -> None:  # type: ignore[no-untyped-def]
    """The fork server started with RLIMIT_STACK raised (boot.py), so a plan with loops, even
    one of the largest step limit, runs on its process's main thread: no thread is started for
    it, and none waits in the process before the run."""
    source = (
        "import resource, threading\nfrom planlang.sandbox import deep_stack\n"
        "threads = threading.active_count()\n"
        "on_main = deep_stack.run_on_deep_stack(\n"
        "    lambda: threading.current_thread() is threading.main_thread(),\n"
        "    deep_stack.MAX_STACK, lambda: None)\n"
        "result = [threads, on_main, resource.getrlimit(resource.RLIMIT_STACK)[0]]\n"
    )
    threads, on_main, stack = eval(probe(pools, KERNEL, source))  # noqa: S307
    assert threads == 1 and on_main is True
    assert stack >= deep_stack.MAX_STACK + deep_stack.STACK_MARGIN


def test_a_tuple_nested_past_the_default_stack_hashes_on_the_main_thread() -> None:
    """Three million levels (a 1 GiB stack's worth, past a 8 MiB stack's 100,000) hash in the
    plan's process as they do in one process: the main thread's stack grows that far."""
    from planlang import Limits, Sandbox

    plan = (
        "t = ()\nfor i in range(1000000):\n    for j in range(3):\n        t = (t,)\n"
        "result = hash(t) != 0\n"
    )
    box = Sandbox(limits=Limits(steps=9_500_000, seconds=120), isolation="process")
    assert box.run(plan) is True


def test_planlang_doctor_under_in_process_isolation_says_no_layer_confines_a_plan() -> None:
    """With ``isolation = inprocess`` a plan runs in the caller's own process: no layer of
    the process boundary or the operating system holds it, so none is reported active (it
    said "a separate process" and every layer active, exit 0), each says it is unused, and
    the exit code is 1, as for a missing layer."""
    done = _doctor("inprocess", "--json")
    report = json.loads(done.stdout)
    assert report["isolation"] == "inprocess"
    assert report["layers"] and not any(layer["active"] for layer in report["layers"])
    assert all("unused" in layer["detail"] for layer in report["layers"])
    assert done.returncode == 1
    text = _doctor("inprocess")
    assert text.returncode == 1 and "Traceback" not in text.stderr
    assert "in this process" in text.stderr
