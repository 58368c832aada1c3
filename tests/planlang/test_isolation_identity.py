"""A plan's process runs as a kernel uid of its own, and seccomp keeps it off other processes.

The red team (REDTEAM 1, 2, 3, 11, 12, 18 in ``test_isolation_redteam.py``) showed what a child
could do to the host while it kept the host's uid. Those tests run with every layer on; these
show each of the two layers that close them holding alone (the other left out of the child,
landlock too, and the audit hook switched off by the probe), and that what a plan's process
legitimately does still works: its scratch directory, its own limits and niceness, its threads.
"""

from __future__ import annotations

import os
import resource
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from planlang.isolation.identity import SCRATCH_FILES, UID_BASE
from planlang.isolation.pool import Pool
from planlang.isolation.testing import run_probe
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits

HOOK_OFF = "from planlang.isolation import confine\nconfine._state['strict'] = False\n"
# each attempt: its name, a call; the probe's result is the names of those that succeeded
# (__PID__: the victim's pid, __FILE__: the host's file)
ATTEMPTS = """
import ctypes, fcntl, os, resource, signal
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def setown():
    r, w = os.pipe()
    fcntl.fcntl(r, fcntl.F_SETOWN, __PID__)
    fcntl.fcntl(r, 10, signal.SIGKILL)  # F_SETSIG
    fcntl.fcntl(r, fcntl.F_SETFL, fcntl.fcntl(r, fcntl.F_GETFL) | os.O_ASYNC)
    os.write(w, b'x')  # SIGKILL to the owner, if the kernel lets it through
def keyctl():
    if libc.syscall(250, 0, ctypes.c_long(-3), 0) < 0:  # KEYCTL_GET_KEYRING_ID, session
        raise OSError(ctypes.get_errno(), 'keyctl')
def shmget():
    if libc.shmget(0, 4096, 0o1600) < 0:
        raise OSError(ctypes.get_errno(), 'shmget')
done = []
for name, f in [
    ('prlimit', lambda: resource.prlimit(__PID__, resource.RLIMIT_NOFILE, (5, 5))),
    ('nice', lambda: os.setpriority(os.PRIO_PROCESS, __PID__, 19)),
    ('nice of the user', lambda: os.setpriority(os.PRIO_USER, 0, 19)),
    ('idle', lambda: os.sched_setscheduler(__PID__, os.SCHED_IDLE, os.sched_param(0))),
    ('affinity', lambda: os.sched_setaffinity(__PID__, {0})),
    ('chmod', lambda: os.chmod(__FILE__, 0o777)),
    ('utime', lambda: os.utime(__FILE__, (0, 0))),
    ('setown', setown), ('keyctl', keyctl), ('shmget', shmget),
]:
    try:
        f()
        done.append(name)
    except OSError:
        pass
result = done
"""


@pytest.fixture(scope="module")
def pools() -> Iterator[dict[str, Pool]]:
    made = {
        "seccomp": Pool(1, probes=True, without=("user namespace", "landlock")),
        "own uid": Pool(1, probes=True, without=("seccomp", "landlock")),
        "all": Pool(1, probes=True),
        # its own /proc files are read below: under its own root no /proc path resolves
        "all but its own root": Pool(1, probes=True, without=("own root",)),
    }
    yield made
    for pool in made.values():
        pool.close()


def layer(pool: Pool, name: str) -> tuple[bool, str]:
    found = {n: (on, detail) for n, on, detail in pool.layers()}
    return found[name]


def need(pool: Pool, *names: str) -> None:
    for name in names:
        on, detail = layer(pool, name)
        if not on:
            pytest.skip(f"the {name} layer is not active on this machine: {detail}")


@pytest.fixture
def victim() -> Iterator[subprocess.Popen[bytes]]:
    made = subprocess.Popen(["sleep", "60"])  # noqa: S607 - coreutils
    yield made
    made.kill()
    made.wait()


def attempts(pool: Pool, victim: subprocess.Popen[bytes], file: Path) -> list[str]:
    probe = HOOK_OFF + ATTEMPTS.replace("__PID__", str(victim.pid)).replace(
        "__FILE__", repr(str(file))
    )
    return list(run_probe(pool, probe))


def state(pid: int, file: Path) -> tuple[object, ...]:
    stat = file.stat()
    return (resource.prlimit(pid, resource.RLIMIT_NOFILE), os.getpriority(os.PRIO_PROCESS, pid),
            os.sched_getscheduler(pid), os.sched_getaffinity(pid), stat.st_mode,
            stat.st_mtime)  # fmt: skip


@pytest.mark.parametrize("alone", ["seccomp", "own uid"])
def test_each_layer_alone_keeps_the_child_off_another_process_and_the_hosts_files(
    pools: dict[str, Pool], victim: subprocess.Popen[bytes], tmp_path: Path, alone: str
) -> None:
    """With only seccomp, or only the child's own uid (and its user namespace), no call that
    the kernel checks against the caller's uid reaches the host's process or file."""
    pool = pools[alone]
    need(pool, alone)
    file = tmp_path / "host.env"
    file.write_text("LLM_API_KEY=sk-test-not-a-real-key\n")
    file.chmod(0o600)
    before = state(victim.pid, file)
    done = attempts(pool, victim, file)
    if alone == "own uid":  # what is its own (its keyring, IPC namespace, uid's processes)
        # is its to use, and the kernel checks F_SETOWN's signal when it is sent
        own = ("keyctl", "shmget", "nice of the user", "setown")
        done = [name for name in done if name not in own]
    assert done == [], done
    time.sleep(0.2)  # a signal is delivered at once; this is only a margin
    assert victim.poll() is None, "the victim was killed by the plan's process"
    assert state(victim.pid, file) == before


def test_the_child_runs_as_a_uid_no_other_process_has(pools: dict[str, Pool]) -> None:
    """Root inside a user namespace of its own whose only uid is, in the host's namespace,
    UID_BASE plus its pid (unique among live processes); the scratch directory is its own."""
    pool = pools["all but its own root"]
    need(pool, "own uid", "user namespace")
    probe = HOOK_OFF + (
        "import os\nresult = [os.getpid(), os.getuid(), os.getgid(), os.getgroups(),"
        " open('/proc/self/uid_map').read().split(), open('/proc/self/gid_map').read().split(),"
        " os.stat('.').st_uid]\n"
    )
    pid, uid, gid, groups, uid_map, gid_map, scratch_owner = run_probe(pool, probe)
    own = str(UID_BASE + pid)
    assert (uid, gid, groups, scratch_owner) == (0, 0, [], 0)
    assert uid_map == ["0", own, "1"] and gid_map == ["0", own, "1"]
    made = Sandbox(limits=Limits(seconds=10), isolation="process")
    made._pool = pool  # type: ignore[attr-defined]
    assert made.run("result = 1\n") == 1


def test_the_scratch_directory_is_the_childs_own(pools: dict[str, Pool]) -> None:
    """It may make, write, read, rename and remove files and directories in its scratch
    directory; it may not chmod or utime even those (no plan's process needs to)."""
    pool = pools["all"]
    need(pool, "own uid", "seccomp")
    probe = HOOK_OFF + (
        "import os\nos.mkdir('d')\nwith open('d/f', 'w') as out:\n    out.write('ok')\n"
        "os.rename('d/f', 'd/g')\ntext = open('d/g').read()\nos.remove('d/g')\nos.rmdir('d')\n"
        "refused = []\nopen('h', 'w').close()\n"
        "for f in (lambda: os.chmod('h', 0o777), lambda: os.utime('h', (0, 0))):\n"
        "    try:\n        f()\n    except PermissionError:\n        refused.append(1)\n"
        "result = [text, os.listdir('.'), len(refused)]\n"
    )
    assert run_probe(pool, probe) == ["ok", ["h"], 2]


def test_the_scratch_directory_holds_a_bounded_number_of_files(pools: dict[str, Pool]) -> None:
    """Its own tmpfs: past SCRATCH_FILES entries no more can be made (the bytes are bounded
    too: REDTEAM 8 in test_isolation_redteam.py), and nothing of it is on the host's disk."""
    pool = pools["all"]
    need(pool, "scratch quota")
    probe = HOOK_OFF + (
        "import os\nmade = 0\ntry:\n    for i in range(__N__):\n"
        "        open(f'f{i}', 'w').close()\n        made += 1\n"
        "except OSError:\n    pass\nfrom planlang.isolation import identity\n"
        "result = [made, identity.rooted() or os.getcwd()]\n"  # the host's path of it
    )
    made, scratch = run_probe(pool, probe.replace("__N__", str(2 * SCRATCH_FILES)))
    assert 0 < made < SCRATCH_FILES, made
    try:  # the worker removes its scratch directory when it is recycled: gone is fine too
        left = os.listdir(scratch)
    except FileNotFoundError:
        left = []
    assert left == [], left


def test_the_child_still_sets_its_own_limits_and_niceness(pools: dict[str, Pool]) -> None:
    pool = pools["all"]
    need(pool, "seccomp")
    probe = HOOK_OFF + (
        "import os, resource\nsoft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (soft - 1, hard))\n"
        "nice = min(19, os.getpriority(os.PRIO_PROCESS, 0) + 1)\n"
        "os.setpriority(os.PRIO_PROCESS, 0, nice)\n"
        "os.sched_setaffinity(0, os.sched_getaffinity(0))\n"
        "result = [resource.getrlimit(resource.RLIMIT_NOFILE)[0] == soft - 1,"
        " os.getpriority(os.PRIO_PROCESS, 0) == nice]\n"
    )
    assert run_probe(pool, probe) == [True, True]


def test_the_x32_numbers_are_refused(pools: dict[str, Pool]) -> None:
    """The x32 ABI gives every call a second number (0x40000000 + n): a deny list of the
    x86_64 numbers alone would let socket() through as x32's."""
    pool = pools["seccomp"]
    need(pool, "seccomp")
    probe = HOOK_OFF + (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.syscall.restype = ctypes.c_long\n"
        "n = libc.syscall(ctypes.c_long(0x40000000 + 41), 2, 1, 0)\n"
        "result = [n, ctypes.get_errno()]\n"
    )
    assert run_probe(pool, probe) == [-1, 1]  # EPERM: the filter's, not the kernel's ENOSYS


def test_threads_are_bounded_to_what_the_run_may_start(pools: dict[str, Pool]) -> None:
    """RLIMIT_NPROC, counted for the child's own uid alone: the run's callback threads and
    lanes start (the bound of the default limits, and more), far more do not."""
    pool = pools["own uid"]
    need(pool, "own uid")
    probe = HOOK_OFF + (
        "import threading\nthreading.stack_size(32768)\ngo = threading.Event()\nmade = 0\n"
        "try:\n    for _ in range(500):\n"
        "        threading.Thread(target=go.wait, daemon=True).start()\n        made += 1\n"
        "except RuntimeError:\n    pass\ngo.set()\nresult = made\n"
    )
    from planlang.isolation.callback_threads import bound_for
    from planlang.isolation.confine import THREAD_MARGIN
    from planlang.isolation.lanes import LANES

    bound = bound_for(Limits()) + LANES
    made = run_probe(pool, probe)
    assert bound <= made < bound + THREAD_MARGIN, (made, bound)


def test_the_layers_are_reported(pools: dict[str, Pool]) -> None:
    names = {name for name, _on, _detail in pools["all"].layers()}
    assert {"own uid", "user namespace", "IPC namespace", "scratch quota", "keyring"} <= names
    on, detail = layer(pools["seccomp"], "own uid")
    assert not on and detail == "left out (tests only)"


def test_without_root_the_own_uid_is_said_to_be_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    from planlang.isolation import identity

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    own = identity._switch("/nonexistent")
    assert not own.active and "uid 1000" in own.detail
