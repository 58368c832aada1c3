"""Red team of process isolation (session 8): the host against a plan's process that runs code
the attacker controls, as if the language layer had already failed.

Each test drives a compromised child through the test-only probe (``Pool(probes=True)``,
``planlang.isolation.testing``): raw Python in the plan's place, with every layer the pool
reports active (the audit hook, a Python-level layer raw Python can switch off, is switched
off where a kernel layer is what is tested). Each test that shows a defect is a strict xfail
named ``REDTEAM n``; it passes once the defect is fixed (then drop the mark).
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from probe_prelude import CHANNEL, probed

from planlang.errors import PlanError, PlanLimitError
from planlang.isolation import pool as pool_module
from planlang.isolation import wire
from planlang.isolation.codec import CodecError, Decoder
from planlang.isolation.confine import FILE_BYTES
from planlang.isolation.pool import Pool
from planlang.isolation.testing import run_probe
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits

HANG_GUARD = 30.0
HOOK_OFF = "from planlang.isolation import confine\nconfine._state['strict'] = False\n"


@pytest.fixture
def pool(probe_pool: Pool) -> Pool:
    return probe_pool  # the session's (conftest.py)


def active(pool: Pool, *names: str) -> None:
    layers = {name: (on, detail) for name, on, detail in pool.layers()}
    for name in names:
        on, detail = layers[name]
        if not on:
            pytest.skip(f"the {name} layer is not active on this machine: {detail}")


@pytest.fixture
def victim() -> Iterator[subprocess.Popen[bytes]]:
    """A process of the host's user that is none of planlang's: the host, its fork server and
    the other plans' processes stand in the same place."""
    made = subprocess.Popen(["sleep", "60"])  # noqa: S607 - coreutils
    yield made
    made.kill()
    made.wait()


# -- REDTEAM 1: the plan's process keeps the host's uid ----------------------------------------


def test_a_child_cannot_change_the_limits_or_scheduling_of_another_process(
    pool: Pool, victim: subprocess.Popen[bytes]
) -> None:
    """Every layer active. The user namespace is entered without a uid map, so the child keeps
    the host's kernel uid (root here): prlimit64, setpriority, sched_setaffinity and
    sched_setscheduler pass the kernel's same-owner check for every process of that user, the
    host itself included, and neither seccomp nor landlock filters them. A child can so set
    the host's RLIMIT_CPU to 0 (killed with SIGXCPU at its next CPU second), RLIMIT_NOFILE to
    3 (the host can no longer open a pipe, a file or a socket), or make it SCHED_IDLE."""
    active(pool, "user namespace", "landlock", "seccomp")
    pid = victim.pid
    before = (resource.prlimit(pid, resource.RLIMIT_NOFILE), os.getpriority(os.PRIO_PROCESS, pid),
              os.sched_getscheduler(pid))  # fmt: skip
    probe = HOOK_OFF + (
        "import os, resource\ndone = []\n"
        f"for name, f in [('prlimit', lambda: resource.prlimit({pid}, resource.RLIMIT_NOFILE, (3, 3))),\n"  # noqa: E501
        f"                ('nice', lambda: os.setpriority(os.PRIO_PROCESS, {pid}, 19)),\n"
        f"                ('idle', lambda: os.sched_setscheduler({pid}, os.SCHED_IDLE, os.sched_param(0)))]:\n"  # noqa: E501
        "    try:\n        f()\n        done.append(name)\n    except OSError:\n        pass\n"
        "result = done\n"
    )
    done = run_probe(pool, probe)
    after = (resource.prlimit(pid, resource.RLIMIT_NOFILE), os.getpriority(os.PRIO_PROCESS, pid),
             os.sched_getscheduler(pid))  # fmt: skip
    assert done == [] and after == before, (done, before, after)


def test_a_child_cannot_break_the_runs_after_it_through_its_fork_server() -> None:
    """The same hole, aimed at the fork server (the child's parent: ``os.getppid()``): with
    its RLIMIT_NOFILE at 4 it can no longer take a fork request's 18 pipe ends, answers
    every request with "no child", and stays alive, so the pool keeps it: every later run
    of the pool fails, not with a PlanError but with RuntimeError("The plan fork server has
    ended."), until the host restarts."""
    own = Pool(1, probes=True)
    try:
        active(own, "user namespace", "landlock", "seccomp")
        probe = HOOK_OFF + (
            "import os, resource\n"
            "try:\n    resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE, (4, 4))\n"
            "except OSError:\n    pass\nresult = None\n"
        )
        run_probe(own, probe)
        for _ in range(2):
            box = Sandbox(limits=Limits(seconds=10), isolation="process")
            box._pool = own  # type: ignore[attr-defined]
            assert box.run("result = 1\n") == 1
    finally:
        own.close()


def test_a_fork_server_that_cannot_take_a_request_is_replaced() -> None:
    """REDTEAM 1's second half, from the host's side: whatever lowered the fork server's
    open-file limit (no child can now), a server that answers a request with "no child"
    while it still lives is closed, so the pool starts a fresh one: the run that met it
    fails, the runs after it do not (the pool kept such a server for every later run)."""
    own = Pool(1)
    try:
        box = Sandbox(limits=Limits(seconds=10), isolation="process")
        box._pool = own  # type: ignore[attr-defined]
        assert box.run("result = 1\n") == 1
        server = own._zygote
        assert server is not None
        resource.prlimit(server.process.pid, resource.RLIMIT_NOFILE, (4, 4))
        outcomes = []
        for _ in range(4):
            try:
                outcomes.append(box.run("result = 1\n"))
            except RuntimeError:
                outcomes.append("failed")
        assert outcomes.count("failed") <= 1 and outcomes[-2:] == [1, 1], outcomes
        assert own._zygote is not server
    finally:
        own.close()


def test_a_child_cannot_change_a_file_of_the_host(pool: Pool, tmp_path: Path) -> None:
    """Every layer active; landlock says "writes only inside the scratch directory". chmod
    and utime are not writes to landlock, and the kernel lets a file's owner (the same kernel
    uid: REDTEAM 1) change both, wherever the path leads: a child can make the host's .env
    or /etc/shadow world-readable, a root program setuid (any local user then has root),
    or the host's own files unreadable; and set times (the host's .pyc caches trust source
    mtimes: found by setting the standard library's reprlib.py to 1970, since restored)."""
    active(pool, "user namespace", "landlock", "seccomp")
    secret = tmp_path / "host.env"
    secret.write_text("LLM_API_KEY=sk-test-not-a-real-key\n")
    secret.chmod(0o600)
    os.utime(secret, (1_600_000_000, 1_600_000_000))
    before = secret.stat()
    probe = HOOK_OFF + (
        "import os\ndone = []\n"
        f"for name, f in [('chmod', lambda: os.chmod({str(secret)!r}, 0o777)),\n"
        f"                ('utime', lambda: os.utime({str(secret)!r}, (0, 0)))]:\n"
        "    try:\n        f()\n        done.append(name)\n    except OSError:\n        pass\n"
        "result = done\n"
    )
    done = run_probe(pool, probe)
    after = secret.stat()
    assert done == [], done
    assert (after.st_mode, after.st_mtime) == (before.st_mode, before.st_mtime)


KEYRING_HOST = """
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.syscall(250, 1, ctypes.c_char_p(b"planlang-redteam"))  # KEYCTL_JOIN_SESSION_KEYRING
secret = b"sk-test-not-a-real-key"
kid = libc.syscall(248, b"user", b"redteam", secret, ctypes.c_size_t(len(secret)),
                   ctypes.c_int(-3))  # add_key to this process's session keyring
from planlang.isolation.pool import Pool
from planlang.isolation.testing import run_probe
pool = Pool(1, probes=True)
layers = {name: on for name, on, _ in pool.layers()}
probe = (
    "from planlang.isolation import confine\\nconfine._state['strict'] = False\\n"
    "import ctypes\\nlibc = ctypes.CDLL(None, use_errno=True)\\n"
    "libc.syscall.restype = ctypes.c_long\\nbuf = ctypes.create_string_buffer(64)\\n"
    f"n = libc.syscall(250, 11, ctypes.c_long({kid}), buf, ctypes.c_size_t(64))  # KEYCTL_READ\\n"
    "result = buf.raw[:max(n, 0)].decode()\\n"
)
try:
    print(json.dumps([layers, run_probe(pool, probe)]))
finally:
    pool.close()
    libc.syscall(250, 3, ctypes.c_long(kid))  # KEYCTL_REVOKE
"""


def test_a_child_cannot_read_the_hosts_session_keyring() -> None:
    """Every layer active. A host that keeps its API key in the kernel's keyring (the
    ``keyring`` package's keyctl backend, a login's session keyring) hands it to every plan:
    the fork server and its children inherit the host's session keyring, in the new user
    namespace too, and possess its keys; add_key, request_key and keyctl pass seccomp and
    landlock. The host here is a subprocess with a session keyring of its own (this test's
    process and its session are left alone)."""
    env = {key: value for key, value in os.environ.items() if key != "LLM_API_KEY"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    done = subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-c", KEYRING_HOST], capture_output=True, text=True, env=env,
        timeout=120, check=True,
    )  # fmt: skip
    layers, read = json.loads(done.stdout.strip().splitlines()[-1])
    if not all(layers[name] for name in ("user namespace", "landlock", "seccomp")):
        pytest.skip(f"a kernel layer is not active on this machine: {layers}")
    assert read != "sk-test-not-a-real-key", "the plan's process read the host's key"


# -- REDTEAM 2: a signal out through SIGIO, past seccomp -----------------------------------------


@pytest.fixture(scope="module")
def pool_without_landlock() -> Iterator[Pool]:
    made = Pool(1, probes=True, without=("landlock",))
    yield made
    made.close()


def test_seccomp_alone_stops_a_signal_to_another_process(
    pool_without_landlock: Pool, victim: subprocess.Popen[bytes]
) -> None:
    """seccomp says "no signals to other processes", as the only layer that does where landlock
    has no signal scoping (Linux before 6.12: landlock is then reported active, and this is
    open on such a machine with every layer on). The kernel sends SIGIO, or any signal
    F_SETSIG names, to the owner a descriptor was given with F_SETOWN, checked only against
    the setter's uid (the host's, see REDTEAM 1): SIGKILL reaches any process of the host's
    user. Here: landlock left out, user namespace and seccomp on."""
    active(pool_without_landlock, "user namespace", "seccomp")
    probe = HOOK_OFF + (
        "import os, fcntl, signal\nr, w = os.pipe()\n"
        f"fcntl.fcntl(r, fcntl.F_SETOWN, {victim.pid})\n"
        "fcntl.fcntl(r, 10, signal.SIGKILL)  # F_SETSIG\n"
        "fcntl.fcntl(r, fcntl.F_SETFL, fcntl.fcntl(r, fcntl.F_GETFL) | os.O_ASYNC)\n"
        "os.write(w, b'x')\nresult = 'sent'\n"
    )
    try:
        run_probe(pool_without_landlock, probe)
    except PlanError:
        pass  # refused: as it should be
    time.sleep(0.5)  # a signal is delivered at once; this is only a margin
    assert victim.poll() is None, "the victim was killed by the plan's process"


# -- REDTEAM 3: System V IPC is the host's -----------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmat.restype = ctypes.c_void_p
_IPC_RMID = 0


def _segments() -> set[int]:
    with open("/proc/sysvipc/shm") as table:
        return {int(line.split()[1]) for line in list(table)[1:]}


def test_shared_memory_a_child_makes_does_not_outlive_it(pool: Pool) -> None:
    """Every layer active. The child shares the host's IPC namespace: shmget makes a segment
    that stays in the kernel after the plan's process is gone, until reboot. Attached,
    written and detached in turn, segments hold as much memory as the machine has, past the
    plan's memory limit (RLIMIT_AS counts only what is attached), after the run. (The same
    namespace lets a child attach a segment of the host's user: see the next test.)"""
    active(pool, "user namespace", "landlock", "seccomp")
    before = _segments()
    probe = HOOK_OFF + (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.shmat.restype = ctypes.c_void_p\n"
        "sid = libc.shmget(0, 1 << 20, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600\n"
        "if sid >= 0:\n    a = libc.shmat(sid, None, 0)\n    ctypes.memset(a, 1, 1 << 20)\n"
        "    libc.shmdt(ctypes.c_void_p(a))\nresult = sid\n"
    )
    made = run_probe(pool, probe)
    time.sleep(0.2)
    left = _segments() - before
    for sid in left:  # leave nothing behind, whatever the outcome
        _libc.shmctl(sid, _IPC_RMID, None)
    assert made < 0 or made not in left, f"segment {made} outlived the plan's process"


def test_a_child_cannot_read_the_hosts_shared_memory(pool: Pool) -> None:
    """Every layer active; landlock says a child reads only the code it runs. A segment the
    host's user made (mode 0600) is the child's to attach: same kernel uid, same namespace."""
    active(pool, "user namespace", "landlock", "seccomp")
    secret = b"host-secret-0600"
    sid = _libc.shmget(0, 4096, 0o1600)
    assert sid >= 0
    try:
        address = _libc.shmat(sid, None, 0)
        ctypes.memmove(address, secret, len(secret))
        _libc.shmdt(ctypes.c_void_p(address))
        probe = HOOK_OFF + (
            "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            f"libc.shmat.restype = ctypes.c_void_p\na = libc.shmat({sid}, None, 0o10000)\n"
            f"result = None if a in (None, 2**64 - 1) else ctypes.string_at(a, {len(secret)})"
            ".decode()\n"
        )  # SHM_RDONLY
        read = run_probe(pool, probe)
    finally:
        _libc.shmctl(sid, _IPC_RMID, None)
    assert read != secret.decode(), "the plan's process read the host's shared memory"


# -- REDTEAM 4: a scratch directory nested past the host's recursion limit -----------------------

DEEP = HOOK_OFF + (
    "import os, time\nfor i in range(1100):\n    os.mkdir('d')\n    os.chdir('d')\nresult = i\n"
)


def _forget_dead_discarder() -> None:
    """Tests only: start a fresh discard thread if the attack killed the process-wide one."""
    with pool_module._discarder_lock:
        if pool_module._discarder and not pool_module._discarder[0].is_alive():
            pool_module._discarder.clear()


def _remove(path: str) -> None:
    subprocess.run(["rm", "-rf", path], check=False)  # noqa: S603, S607 - not recursive in Python


def test_a_deep_scratch_tree_ends_the_run_with_a_plan_error(pool: Pool) -> None:
    """Every layer active (landlock lets a child make directories in scratch). A run that
    ends other than "finished" discards its child on the caller's thread:
    ``shutil.rmtree`` (recursive in Python 3.11, one frame and one descriptor a level) raises
    RecursionError, which leaves ``Sandbox.run`` as itself, not a PlanError, and the tree
    stays on disk."""
    box = probed(pool, DEEP + "time.sleep(30)\n", Limits(seconds=2))
    try:
        with pytest.raises(PlanLimitError):
            box.run("result = None\n")
    finally:
        assert pool.last is not None
        _remove(pool.last.scratch)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_deep_scratch_tree_is_removed_and_the_discarder_lives(pool: Pool) -> None:
    """Every layer active. A finished run is discarded on the host's one background thread
    (``pool.discard_later``); rmtree's RecursionError ends that thread, so from then on no
    finished child of any pool is discarded: scratch directories and pidfds pile up in the
    host (``_discard_loop`` has no guard)."""
    box = probed(pool, DEEP, Limits(seconds=10))
    scratch = ""
    try:
        assert box.run("result = None\n") == 1099
        assert pool.last is not None
        scratch = pool.last.scratch
        gone_by = time.monotonic() + HANG_GUARD
        while (os.path.exists(scratch) and pool_module._discarder[0].is_alive()
               and time.monotonic() < gone_by):  # fmt: skip
            time.sleep(0.05)
        assert not os.path.exists(scratch), "the plan's scratch tree was left behind"
        assert pool_module._discarder[0].is_alive(), "the discard thread died"
    finally:
        _forget_dead_discarder()
        if scratch:
            _remove(scratch)


# -- REDTEAM 5: host words that run after the run has returned -----------------------------------


def test_no_host_word_runs_after_the_run_returns(pool: Pool) -> None:
    """Every layer active. A child sends host calls outside any call of the host's (context
    None: they go to the endpoint's spare pool), then answers the run at once. The run
    returns; the spare pool is shut down without waiting, so the words already started run
    on, after the run is over (and its meter closed): a word that bills, writes or sends does
    so for a run that has ended. In one process no host word runs after ``run`` returns (the
    host refuses such requests: the run ends as a protocol break)."""
    events: list[tuple[str, float]] = []

    def w() -> int:
        events.append(("start", time.monotonic()))
        time.sleep(1.0)
        events.append(("end", time.monotonic()))
        return 1

    probe = CHANNEL + (
        "for i in range(5):\n"
        "    write_all(ep._writer, ['q', 100 + i, None, 'call', [wid, [], {'d': []}, None]])\n"
        "time.sleep(0.5)  # the host's spare threads take them meanwhile\nresult = 'done'\n"
    )
    box = probed(pool, probe, Limits(seconds=5), w=w)
    try:
        assert box.run("result = w\n") == "done"
    except PlanError:
        pass  # refused: as it should be
    returned = time.monotonic()
    running = sum(1 for kind, _ in events if kind == "start") - sum(
        1 for kind, _ in events if kind == "end"
    )
    time.sleep(1.2)  # let them end: nothing left behind for the next test
    late = [kind for kind, at in events if at > returned]
    assert running == 0 and late == [], (running, late)


# -- REDTEAM 6: notices queued for a busy host thread, without bound -----------------------------


def test_notices_for_a_busy_host_thread_are_bounded(pool: Pool) -> None:
    """The plan's host thread calls a plan function back (a host word ``w(f)``) and waits for
    its answer, reading the channel for it; the child never answers, and sends notices
    (``["n", R, op, payload]``) in the run's context instead. The reader hands each to the
    run's inbox (``Endpoint._route``): requests there are bounded (``MAX_PENDING``), notices
    not at all, and nobody takes them off until the callback's answer comes. 700 MB of them
    on a 64 MiB plan grow the host by about as much (600 MB in a 4 s run, measured; a longer
    time limit: as much as the host has), past the 256 MiB the host takes from one frame."""
    probe = CHANNEL + (
        "write_all(ep._writer, ['q', 9, R, 'call', [wid, [{'c': 1}], {'d': []}, None]])\n"
        "ask = ep._reader.read()  # the host's callback: never answered\n"
        "big = 'y' * 1_000_000\n"
        "for i in range(700):\n    write_all(ep._writer, ['n', R, 'junk', big])\n"
        "time.sleep(30)\nresult = None\n"
    )
    box = probed(pool, probe, Limits(seconds=6, memory_mb=64), w=lambda f: f())
    tracemalloc.start()  # what Python holds, whatever the allocator kept from earlier tests
    try:
        with pytest.raises(PlanError):
            box.run("result = w\n")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 300 * 2**20, f"the host held {peak >> 20} MiB at once"


# -- REDTEAM 7: the host decoder's hashing budget counts nodes, not digits -----------------------


def test_a_key_of_shared_big_ints_is_refused_as_too_costly_to_hash() -> None:
    """``HASH_BUDGET`` bounds the tuple nodes hashing a frame's keys walks, each counted as 1;
    an int's hash is not cached and walks all its digits. A 1-tuple holding a 100 KB int,
    referenced 5,000 times in a tuple that is a set member, costs 5,000 nodes and hashes
    5,000 x 100 KB in one call of ``hash`` (0.6 s here; 500,000 references and a 1 MB int,
    a 7 MB frame within the floor budget: about 10 minutes with the GIL held, so the host's
    clock, every other run and the deadline's kill all stop). Refused, it costs nothing."""
    big = {"i": "f" * 200_000}
    frame = {"s": [{"t": [{"t": [big]}] + [{"r": 2}] * 5_000}]}
    with pytest.raises(CodecError):
        Decoder({}, guarded=True).decode(frame)


# -- REDTEAM 8: the scratch directory has no quota -----------------------------------------------


def test_the_scratch_directory_holds_no_more_than_one_file_limit(pool: Pool) -> None:
    """Every layer active. Scratch is a directory of the host's /tmp (the host's disk, here
    one file system with everything else), bounded only per file (``RLIMIT_FSIZE``, 16 MiB)
    and by the 64 open files: closed files are not counted. A child writes 8 full files, 128
    MiB, in a fraction of a second; at that rate a 60 s plan fills tens of GB, and files
    without end use up the disk's inodes, while the host and every other program on it
    need them. (Each entry also costs the host an unlink when the child is discarded,
    after the run.)"""
    probe = HOOK_OFF + (
        f"block = b'x' * {FILE_BYTES}\nwritten = 0\n"
        "for i in range(8):\n"
        "    try:\n"
        "        with open(f'f{i}', 'wb') as out:\n            written += out.write(block)\n"
        "    except OSError:\n        break\n"
        "result = written\n"
    )
    written = run_probe(pool, probe)
    assert written <= FILE_BYTES, f"the child wrote {written >> 20} MiB to the host's disk"


# -- REDTEAM 9: error names a child sends are kept by the host for ever --------------------------


def test_error_names_a_child_sends_are_not_kept_by_the_host(pool: Pool) -> None:
    """A callback's failure crosses as its error's type name, and the host makes an exception
    class of that name, cached in ``wire._classes`` by the name as sent: a child that fails
    each callback with a new 1 MB name leaves 1 MB in the host per callback, after the run
    and for the host's life (a runtime ``parallel`` of 1,000 thunks: 1 GB)."""
    calls = 20

    def w(f: Any) -> int:
        failed = 0
        for _ in range(calls):
            try:
                f()
            except Exception:  # noqa: BLE001 - the plan function's error, as the host sees it
                failed += 1
        return failed

    probe = CHANNEL + (
        "write_all(ep._writer, ['q', 9, R, 'call', [wid, [{'c': 1}], {'d': []}, None]])\n"
        f"for i in range({calls}):\n"
        "    ask = ep._reader.read()\n"
        "    name = 'E' * 1_000_000 + str(i)\n"
        "    write_all(ep._writer, ['a', ask[1], False, ['error', name, 'x', None, None]])\n"
        "reply = ep._reader.read()\nresult = reply[3]\n"
    )
    before = set(wire._classes)
    box = probed(pool, probe, Limits(seconds=10), w=w)
    try:
        assert box.run("result = w\n") == calls
        kept = sum(len(name) for name in set(wire._classes) - before)
    finally:
        for name in set(wire._classes) - before:
            del wire._classes[name]
    assert kept < 10_000, f"the host keeps {kept:,} characters of error names the child sent"


# -- REDTEAM 10: a child that closes its pipe and lives on holds the run past its grace ---------


def test_a_child_that_closes_its_pipe_ends_within_its_limit_and_grace(pool: Pool) -> None:
    """Every layer active. The host hears the pipe's end and asks the fork server why the
    child ended (``Child.death``), waiting up to 5 s for an exit that a sleeping child never
    makes, before it kills it: a 0.5 s plan ends after 5.5 s, past its limit plus ``GRACE``.
    (Bounded, but by a constant the time limit does not govern.)"""
    from planlang.isolation.parent import GRACE

    probe = (
        "import gc, os, time\nfrom planlang.isolation.channel import Endpoint\n"
        "ep = [o for o in gc.get_objects() if type(o) is Endpoint][0]\n"
        "os.close(ep._writer)\ntime.sleep(30)\nresult = None\n"
    )
    box = probed(pool, probe, Limits(seconds=0.5))
    started = time.monotonic()
    with pytest.raises(PlanLimitError):
        box.run("result = None\n")
    took = time.monotonic() - started
    assert took < 0.5 + GRACE + 3.0, f"the run ended after {took:.1f} s"


# -- REDTEAM 13: "_"-named keywords reach a host object's methods -----------------------------


class _Store:
    def __init__(self) -> None:
        self.calls: list[tuple[int, bool]] = []

    def put(self, x: int, _admin: bool = False) -> bool:
        self.calls.append((x, _admin))
        return _admin


def test_a_child_cannot_pass_an_underscore_keyword_to_a_host_method(pool: Pool) -> None:
    """Every layer active. The plan's wrapper refuses ``s.put(**{'_admin': True})`` in both
    modes, and for a host word the host refuses it again for a child that skips the wrapper
    (``test_isolation_hostile``); a ``method`` request goes straight to
    ``getattr(target, name)(*args, **kwargs)``: the child reaches a parameter the host keeps
    for itself."""
    from planlang.sandbox.wall import HostObject

    store = _Store()
    probe = CHANNEL.replace("wid = box.host['w'].fn.wid\n", "") + (
        "from planlang.isolation.peer import RemoteObject\n"
        "oid = [o for o in gc.get_objects() if type(o) is RemoteObject][0].oid\n"
        "write_all(ep._writer, ['q', 9, R, 'method', [oid, 'put', [1], {'d': ['_admin', True]}]])\n"
        "reply = ep._reader.read()\nresult = reply[2]\n"
    )
    box = probed(pool, probe, Limits(seconds=5), s=HostObject(store, methods=["put"]))
    box.run("result = s\n")
    assert store.calls == [], store.calls


# -- REDTEAM 14: a full scratch directory holds the run while the host removes it -----------------


def test_removing_a_full_scratch_directory_does_not_hold_the_run(
    pool: Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every layer active. A 2 s plan whose process made files in scratch until its deadline
    (about 100,000 here) ended after 5.7 s: ``_end`` discards the child on the caller's
    thread for every end but "finished", and removing the tree takes as long as making it
    did, past the limit and ``GRACE`` (a 60 s plan: a minute more, or far more on a slow
    disk). Here the removal is stood in for by a slow ``remove_tree`` (5 s), so the test
    costs no disk: the run must not wait for it (fixed: the child is stopped at once, and its
    scratch removed on the discard thread)."""
    from planlang.isolation.parent import GRACE

    real = pool_module.remove_tree

    def slow(path: str) -> None:
        time.sleep(5)
        real(path)

    monkeypatch.setattr(pool_module, "remove_tree", slow)
    probe = HOOK_OFF + "open('made', 'w').close()\nimport time\ntime.sleep(30)\nresult = None\n"
    box = probed(pool, probe, Limits(seconds=1))
    started = time.monotonic()
    with pytest.raises(PlanLimitError):
        box.run("result = None\n")
    took = time.monotonic() - started
    assert took < 1 + GRACE + 3.0, f"the run ended after {took:.1f} s"


# -- REDTEAM 15: SIGPIPE: a child that closes its reading end kills a host that did not ignore it --

SIGPIPE_HOST = """
import signal
signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # as command-line tools often set it
from planlang.errors import PlanError
from planlang.isolation.pool import Pool
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits
pool = Pool(1, probes=True)
box = Sandbox(host={"w": lambda: 1}, limits=Limits(seconds=2), isolation="process")
box._pool = pool
box._probe = {"probe": PROBE}
try:
    box.run("result = w\\n")
except PlanError:
    pass
pool.close()
print("host alive")
"""


def test_a_child_that_closes_its_reading_end_does_not_kill_the_host() -> None:
    """Every layer active. The channel is a pair of pipes; the host writes its answer to one
    whose reader the child has closed, and the kernel sends the host SIGPIPE. Python ignores
    SIGPIPE at start, but an embedder may not (a CLI that wants ``| head`` to end quietly
    sets SIG_DFL; an interpreter embedded in a C program keeps the C default): that host
    dies, with all its runs. The host here is a subprocess that sets SIG_DFL."""
    probe = CHANNEL + (
        "import os\nos.close(ep._reader.fd)\n"
        "write_all(ep._writer, ['q', 9, R, 'call', [wid, [], {'d': []}, None]])\n"
        "time.sleep(30)\nresult = None\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "LLM_API_KEY"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    done = subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-c", SIGPIPE_HOST.replace("PROBE", repr(probe))],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and "host alive" in done.stdout, done.returncode


# -- REDTEAM 16: a callback that fails "passthrough" raises a BaseException in host code ----------


def test_a_callback_a_child_fails_raises_an_exception_the_host_can_catch(pool: Pool) -> None:
    """Every layer active. ``lanes._failure`` turns a callback's failure described as
    "passthrough" into the host's own passthrough error when there is one, and otherwise
    (``wire.raised``) into ``HostStop``, the plan process's own BaseException. So a host word
    (the runtime's worker, an embedder's fan-out thread) that guards a plan function with
    ``except Exception`` is unwound past its handler; on a thread of the embedder's it ends
    the thread. In one process a plan function cannot raise a BaseException into host code
    (an interrupt is already made a ``PlanLimitError`` here, for that reason). The host makes
    it a protocol break: the host word catches a ``PlanLimitError``, and the run ends so."""
    seen: list[str] = []

    def w(f: Any) -> str:
        try:
            f()
        except Exception as error:  # noqa: BLE001 - what a host word guards a callback with
            seen.append(type(error).__name__)
        except BaseException as error:  # noqa: BLE001 - the defect: recorded, then ended here
            seen.append(f"BaseException {type(error).__name__}")
        return "done"

    probe = CHANNEL + (
        "write_all(ep._writer, ['q', 9, R, 'call', [wid, [{'c': 1}], {'d': []}, None]])\n"
        "ask = ep._reader.read()\n"
        "write_all(ep._writer, ['a', ask[1], False, ['passthrough', 'X', '', None, None]])\n"
        "reply = ep._reader.read()\nresult = reply[3]\n"
    )
    box = probed(pool, probe, Limits(seconds=5), w=w)
    with pytest.raises(PlanLimitError, match="broke the protocol"):
        box.run("result = w\n")
    assert seen == ["PlanLimitError"], seen


# -- REDTEAM 17: a child nests host calls in callbacks past the plan's depth limit --------------


def test_a_child_cannot_nest_host_calls_past_the_plans_depth_limit(pool: Pool) -> None:
    """Every layer active. ``w(f)`` calls ``f`` back; ``f`` calls ``w`` (a plan's recursion
    through a host word): in both modes the plan ends at ``Limits.depth`` (here 20: 21 calls
    of ``w``), counted in the plan's process. A child that skips its own count answers each
    callback with another call of ``w`` in that callback's context, and the host nests them
    on one thread, about seven Python frames a level, until its own recursion limit (141
    levels at the default 1,000). A host that raised it (``sys.setrecursionlimit(10**6)``,
    as parsers and symbolic libraries do) nests on until its thread's C stack overflows:
    40,000 levels killed the host with SIGSEGV (measured, in a subprocess)."""
    depth = [0]

    def w(f: Any) -> Any:
        depth[0] += 1
        return f()

    probe = CHANNEL + (
        "ctx = R\n"
        "for i in range(100):\n"
        "    call = [wid, [{'c': 1}], {'d': []}, None]\n"
        "    write_all(ep._writer, ['q', 1000 + i, ctx, 'call', call])\n"
        "    ask = ep._reader.read()\n"
        "    if ask[0] != 'q':\n        break\n"
        "    ctx = ask[1]\n"
        "result = i\n"
    )
    box = probed(pool, probe, Limits(seconds=10, depth=20), w=w)
    with pytest.raises(PlanLimitError) as ended:
        box.run("result = w\n")
    assert ended.value.kind == "depth", ended.value
    assert depth[0] <= 21, f"the host nested {depth[0]} calls of w on one thread"


@pytest.mark.parametrize("isolation", ["inprocess", "process"])
def test_a_plan_recursing_through_a_host_word_ends_as_in_one_process(isolation: str) -> None:
    """The host's own bound on nesting leaves an honest plan to its process's count: the
    same error, with its line, after the same 21 calls of ``w`` at depth 20, in both modes."""
    calls = [0]

    def w(f: Any) -> Any:
        calls[0] += 1
        return f()

    box = Sandbox(host={"w": w}, limits=Limits(seconds=10, depth=20), isolation=isolation)
    with pytest.raises(PlanLimitError) as ended:
        box.run("def f():\n    return w(f)\nresult = w(f)\n")
    assert (ended.value.kind, ended.value.line, calls[0]) == ("depth", 1, 21), ended.value


# -- REDTEAM 18: no bound on a child's threads: the machine's process ids ------------------------


def test_a_child_cannot_start_threads_past_what_a_plan_needs(pool: Pool) -> None:
    """Every layer active. A thread is a kernel task with a process id; seccomp lets threads
    be made (it must), ``RLIMIT_NPROC`` is not set (it does not hold root) and no pids cgroup
    is used, so only ``RLIMIT_AS`` bounds them, by their stacks: at 32 KiB a thread, the
    5.6 GB a default plan may reserve holds some 170,000. This machine's ``pid_max`` is
    32,768: one plan's process can take every process id left, and until it is killed at
    its deadline no process of the machine (the host, its fork server, anyone's) can start
    a thread or a process. A plan needs at most its lanes, its callback threads (1,024 at
    most) and a deep stack; here a child starts 2,000 (harmless: a sixteenth of the ids)."""
    probe = HOOK_OFF + (
        "import threading\nthreading.stack_size(32768)\ngo = threading.Event()\nmade = 0\n"
        "try:\n"
        "    for _ in range(2000):\n"
        "        threading.Thread(target=go.wait, daemon=True).start()\n"
        "        made += 1\n"
        "except (RuntimeError, MemoryError, OSError):\n    pass\n"
        "go.set()\nresult = made\n"
    )
    made = run_probe(pool, probe)
    assert made < 2000, f"the plan's process started {made} threads"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
