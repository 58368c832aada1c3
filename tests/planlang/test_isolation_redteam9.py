"""Session 9's red team of the confinement: raw Python in a plan's process (the test-only
probe), the language layer already failed and the audit hook switched off.

Each test failed on main (70045b9) before its fix:

- with landlock failed (left out) and the process's own root too, seccomp let through the
  new mount API (``fsopen`` + ``fsmount``: a tmpfs of any size, memory outside RLIMIT_AS),
  ``open_tree``, ``chroot``, ``pivot_root``, ``umount2``, ``memfd_create`` (16 MiB a
  descriptor, 64 of them: 1 GiB outside RLIMIT_AS), POSIX message queues,
  ``perf_event_open``, ``bpf``, ``userfaultfd`` and the file-handle calls;
- with every layer on, a plan's process learnt which pids exist on the host, and their
  niceness, scheduling and session (``getpriority``, ``sched_get*``, ``getsid``,
  ``getpgid``, ``ioprio_get`` and ``pidfd_open`` of any pid answer for a live one and fail
  with ESRCH for a free one);
- a success answer that reached the host after the deadline, within ``GRACE``, was taken;
  and in one process, a plan whose last C call ran past the deadline finished;
- with seccomp failed, a process a plan's process forked outlived it.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest
from probe_prelude import HOOK_OFF, SYSCALL

from planlang.errors import PlanLimitError
from planlang.isolation.pool import Pool
from planlang.isolation.testing import run_probe
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits


@pytest.fixture(scope="module")
def pools() -> Iterator[dict[str, Pool]]:
    made = {
        # its own uid and namespaces (root inside them, every capability there), seccomp
        "seccomp": Pool(1, probes=True, without=("landlock", "own root")),
        "all": Pool(1, probes=True),
    }
    yield made
    for pool in made.values():
        pool.close()


def need(pool: Pool, *names: str) -> None:
    found = {name: (on, detail) for name, on, detail in pool.layers()}
    for name in names:
        on, detail = found[name]
        if not on:
            pytest.skip(f"the {name} layer is not active on this machine: {detail}")


def test_seccomp_alone_refuses_mounts_memory_files_and_kernel_objects(
    pools: dict[str, Pool],
) -> None:
    pool = pools["seccomp"]
    need(pool, "seccomp", "user namespace")
    tries = (
        "def tmpfs():\n"
        "    fs = call(430, b'tmpfs', 0)\n"  # fsopen
        "    call(431, fs, 1, b'size', b'1g', 0)\n"  # fsconfig, FSCONFIG_SET_STRING
        "    call(431, fs, 6, None, None, 0)\n"  # FSCONFIG_CMD_CREATE
        "    call(432, fs, 0, 0)\n"  # fsmount
        "def memfd():\n"
        "    fd = os.memfd_create('held')\n    os.write(fd, b'x' * 4096)\n"
        "attr = ctypes.create_string_buffer(128)\n"
        "ctypes.memmove(attr, (ctypes.c_uint32 * 2)(1, 128), 8)\n"  # a software counter
        "result = tried({\n"
        "    'fsopen tmpfs': tmpfs,\n"
        "    'open_tree': lambda: call(428, -100, b'/', 1),\n"
        "    'fspick': lambda: call(433, -100, b'/', 0),\n"
        "    'chroot': lambda: call(161, b'.'),\n"
        "    'pivot_root': lambda: call(155, b'.', b'.'),\n"
        "    'umount2': lambda: call(166, b'/nonexistent', 2),\n"
        "    'memfd_create': memfd,\n"
        "    'mq_open': lambda: call(240, b'q', 0o100 | 2, 0o600, None),\n"
        "    'perf_event_open': lambda: call(298, attr, 0, -1, -1, 0),\n"
        "    'bpf': lambda: call(321, 0, None, 0),\n"
        "    'userfaultfd': lambda: call(323, 0),\n"
        "    'name_to_handle_at': lambda: call(303, -100, b'.', None, None, 0),\n"
        "})\n"
    )
    done = run_probe(pool, HOOK_OFF + SYSCALL + tries)
    # what the kernel let through before the filter refused them (seccomp's EPERM)
    assert done == [], done


def test_no_host_pid_can_be_told_from_a_free_one(pools: dict[str, Pool]) -> None:
    """Each call that reads another process by its pid fails the same for the host's pid as
    for one no process has; the process's own (pid 0) still answers."""
    pool = pools["all"]
    need(pool, "seccomp")
    free = 4_194_000  # above pid_max's largest value (4,194,304 less a margin): no process
    reads = (
        "import os\n"
        "def reads(pid):\n"
        "    return {\n"
        "        'getpriority': lambda: os.getpriority(os.PRIO_PROCESS, pid),\n"
        "        'sched_getscheduler': lambda: os.sched_getscheduler(pid),\n"
        "        'sched_getparam': lambda: os.sched_getparam(pid),\n"
        "        'sched_getaffinity': lambda: os.sched_getaffinity(pid),\n"
        "        'sched_rr_get_interval': lambda: os.sched_rr_get_interval(pid),\n"
        "        'getsid': lambda: os.getsid(pid),\n"
        "        'getpgid': lambda: os.getpgid(pid),\n"
        "        'ioprio_get': lambda: call(252, 1, pid),\n"
        "        'pidfd_open': lambda: os.close(os.pidfd_open(pid)),\n"
        "    }\n"
        "def errors(pid):\n"
        "    found = {}\n"
        "    for name, attempt in reads(pid).items():\n"
        "        try:\n            attempt()\n            found[name] = 0\n"
        "        except OSError as error:\n            found[name] = error.errno\n"
        "    return found\n"
        f"result = [errors({os.getpid()}), errors({free}), tried(reads(0))]\n"
    )
    host, nobody, own = run_probe(pool, HOOK_OFF + SYSCALL + reads)
    assert host == nobody, (host, nobody)
    assert sorted(own) == sorted(set(host) - {"pidfd_open"}), own  # its own still answer


def test_a_success_answer_after_the_deadline_ends_the_plan_at_its_time_limit(
    pools: dict[str, Pool],
) -> None:
    """A plan's process that ignores its own meter and answers success after the deadline,
    within the host's grace, does not finish the plan: in one process the plan's meter
    would have stopped it at its time limit (a host word that sleeps past the deadline ends
    the plan with ``seconds`` there too)."""
    pool = pools["all"]
    late = "import time\ntime.sleep(1.4)\nresult = 'late'\n"  # the limit 1 s, GRACE 1 s
    with pytest.raises(PlanLimitError) as raised:
        run_probe(pool, late, seconds=1)
    assert raised.value.kind == "seconds"


@pytest.mark.parametrize("isolation", ["inprocess", "process"])
def test_a_plan_whose_last_c_call_passes_the_deadline_ends_at_its_time_limit(
    isolation: str,
) -> None:
    """The reference for the above, in both modes: 12,000 colliding ints put in a set is one
    C call of 72 million comparisons (about 2 s of CPU here), no step or clock check inside;
    then the plan ends. It ended well past its 0.2 s limit, yet in one process it finished.
    (With 6,000, 0.5 s here, a quiet moment of a fast CPU finished within the limit: the
    test failed now and then, in either mode.)"""
    plan = "P = 2**61 - 1\ns = set(range(0, 12000 * P, P))\nresult = len(s)\n"
    box = Sandbox(limits=Limits(seconds=0.2), isolation=isolation)
    with pytest.raises(PlanLimitError) as raised:
        box.run(plan)
    assert raised.value.kind == "seconds"


def test_a_process_a_plans_process_forks_ends_with_it() -> None:
    """Where seccomp failed (left out here, landlock too: it does not stop a fork), a plan's
    process can fork; RLIMIT_NPROC bounds how many (its uid's tasks), but the host kills only
    the plan's process itself, so a fork that slept (in a session of its own) outlived the
    run, holding up to its own RLIMIT_AS, with the uid (UID_BASE + the plan process's pid) a
    later plan's process with that pid takes. Now the fork server is every such process's
    subreaper and kills each child of its own that is not a live plan process, whenever one
    has ended."""
    pool = Pool(1, probes=True, without=("landlock", "seccomp"))
    orphan = None
    try:
        need(pool, "own uid")
        probe = HOOK_OFF + (
            "import os, time\npid = os.fork()\nif pid == 0:\n"
            "    os.setsid()\n    time.sleep(60)\n    os._exit(0)\nresult = pid\n"
        )
        orphan = int(run_probe(pool, probe))
        deadline = time.monotonic() + 10  # a hang guard: the plan's process is discarded
        while _alive(orphan) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(orphan), "the plan's fork outlived its run"
    finally:
        pool.close()
        if orphan is not None and _alive(orphan):
            os.kill(orphan, signal.SIGKILL)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs and is not a zombie. A process reaped between the open and the
    read makes the read fail with ESRCH (ProcessLookupError): gone, as a missing entry is."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False
