"""A plan's process has a file tree of its own: its scratch tmpfs, and nothing of the host's.

Tested as if every layer before had failed: a test-only probe runs raw Python in the child
with landlock, seccomp and the network namespace left out and the audit hook switched off, so
only its own root (``identity._own_root``) stands between it and the host's files. Before
it, a plan's process could stat, readlink and test for any host path: the host's tree, the
users under /home, the versions of installed libraries, the host's working directory.
"""

from __future__ import annotations

import os
import struct
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from probe_prelude import HOOK_OFF, SYSCALL

import planlang
from planlang.isolation.pool import Pool
from planlang.isolation.testing import run_probe
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits


@pytest.fixture(scope="module")
def pools() -> Iterator[dict[str, Pool]]:
    made = {
        "alone": Pool(1, probes=True, without=("landlock", "seccomp", "network namespace")),
        "all": Pool(1, probes=True),
    }
    yield made
    for pool in made.values():
        pool.close()


def need_root(pool: Pool) -> None:
    """The layer must be reported (a missing one is said out loud); skip where it is off."""
    found = {name: (on, detail) for name, on, detail in pool.layers()}
    assert "own root" in found, sorted(found)
    on, detail = found["own root"]
    if not on:
        pytest.skip(f"the own root layer is not active on this machine: {detail}")


def test_no_host_path_resolves_in_a_plans_process(pools: dict[str, Pool], tmp_path: Path) -> None:
    pool = pools["alone"]
    need_root(pool)
    host_file = tmp_path / "host.txt"
    host_file.write_text("the host's\n")
    paths = [str(host_file), str(tmp_path), "/", "/home", "/etc/passwd", "/tmp", sys.prefix,
             os.getcwd(), os.path.dirname(planlang.__file__), f"/proc/{os.getpid()}",
             "/proc/self/cwd", "/proc/self/exe", "/proc/1/environ", "/dev/null"]  # fmt: skip
    probe = HOOK_OFF + (
        f"import os\npaths = {paths!r}\nseen = []\n"
        "for path in paths:\n"
        "    for look in (os.stat, os.lstat, os.readlink, os.listdir):\n"
        "        try:\n            look(path)\n            seen.append([look.__name__, path])\n"
        "        except OSError:\n            pass\n"
        "import stat\nfolders = []\n"  # a descriptor of a host directory would lead out
        "for fd in range(1024):\n"
        "    try:\n        if stat.S_ISDIR(os.fstat(fd).st_mode):\n            folders.append(fd)\n"
        "    except OSError:\n        pass\n"
        "result = [seen, os.listdir('/'), os.getcwd(), os.path.exists('/..' + paths[0]),"
        " folders]\n"
    )
    seen, listing, cwd, through_dotdot, folders = run_probe(pool, probe)
    # "/" is its own tmpfs: it may look at that, and it is empty
    assert [look for look in seen if look[1] != "/"] == [], seen
    assert listing == [] and cwd == "/" and through_dotdot is False
    assert folders == []  # it holds no descriptor of a directory at all


def test_its_root_cannot_be_escaped_or_grown(pools: dict[str, Pool]) -> None:
    """No capability is left to chroot out (the classic escape: a chroot beneath the working
    directory, then '..' past the root), to unmount, to make a mount namespace or mount a
    tmpfs (memory outside RLIMIT_AS), nor a user namespace to nest, which would give every
    capability back."""
    pool = pools["alone"]
    need_root(pool)
    tries = (
        "def escape():\n    os.mkdir('jail')\n    os.chroot('jail')\n"
        "    for _ in range(40):\n        os.chdir('..')\n    os.chroot('.')\n"
        "    if not os.path.exists('/etc/passwd'):\n        raise OSError('still inside')\n"
        "tries = {\n"
        "    'chroot escape': escape,\n"
        "    'umount /': lambda: call(166, b'/', 2),\n"
        "    'pivot_root': lambda: call(155, b'.', b'.'),\n"
        "    'mount tmpfs': lambda: call(165, b'x', b'/', b'tmpfs', 0, b'size=1g'),\n"
        "    'fsopen tmpfs': lambda: call(430, b'tmpfs', 0),\n"
        "    'unshare mount': lambda: call(272, 0x00020000),\n"
        "    'unshare user': lambda: call(272, 0x10000000),\n"
        "}\ndone = []\n"
        "for name, attempt in tries.items():\n"
        "    try:\n        attempt()\n        done.append(name)\n"
        "    except OSError:\n        pass\n"
        "result = [done, sorted(os.listdir('/'))]\n"
    )
    probe = HOOK_OFF + SYSCALL + tries
    done, listing = run_probe(pool, probe)
    assert done == [] and listing == ["jail"], (done, listing)


def test_a_plan_runs_under_its_own_root_with_a_precise_memory_meter(pools: dict[str, Pool]) -> None:
    """What a plan's process still needs after it is ready comes with it: its scratch (now
    its root) is writable, and the memory meter reads its own /proc/self/statm, opened before
    the root changed (a fork server's, or none, would leave the meter blind)."""
    pool = pools["all"]
    need_root(pool)
    probe = (
        "import os\nfrom planlang.sandbox import limits\n"
        "with open('notes.txt', 'w') as out:\n    out.write('kept')\n"
        "fd = limits._statm[0]\nbefore = limits._resident_bytes()\n"
        "grown = bytearray(64 << 20)\nafter = limits._resident_bytes()\n"
        "result = [open('notes.txt').read(), fd >= 0, after - before >= 60 << 20]\n"
    )
    assert run_probe(pool, probe) == ["kept", True, True]
    box = Sandbox(limits=Limits(seconds=10), isolation="process")
    box._pool = pool  # type: ignore[attr-defined]
    assert box.run("result = sorted({'b': 2, 'a': 1}.items())\n") == [("a", 1), ("b", 2)]


def test_a_root_that_cannot_be_changed_is_said_to_be_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Where pivot_root fails (say, a kernel or container that refuses it), the layer is
    reported missing with the reason, and what it leaves open; nothing changed here."""
    from planlang.isolation import identity

    def refuse(number: int, *args: object) -> int:
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(identity, "_syscall", refuse)
    monkeypatch.setattr(identity, "_NESTED_LIMIT", str(tmp_path / "max_user_namespaces"))
    layer = identity._own_root(str(tmp_path))
    assert not layer.active and layer.name == "own root"
    assert "pivot_root" in layer.detail and "Operation not permitted" in layer.detail
    assert identity.rooted() is None and os.getcwd() != "/"


def test_a_program_it_executes_gets_no_capability_back(pools: dict[str, Pool]) -> None:
    """Where seccomp and landlock both failed, a plan's process could still write a program
    into a memfd and execute it; an execve by root (it is uid 0 in its namespace) gives every
    capability back, unless the securebits say otherwise. The program (a few bytes of x86-64
    made here) tries chroot(".") and exits with what it returned: 0 if it had the capability,
    255 (-EPERM) if not. Before the fix it exited 0."""
    pool = pools["alone"]
    need_root(pool)
    import platform

    if platform.machine() != "x86_64":
        pytest.skip("the program is x86-64 code")
    code = bytes.fromhex("488d3d10000000b8a10000000f0589c7b83c0000000f05") + b".\0"
    base, size = 0x400000, 120 + len(code)
    elf = (b"\x7fELF\x02\x01\x01\x00" + bytes(8)
           + struct.pack("<HHIQQQIHHHHHH", 2, 0x3E, 1, base + 120, 64, 0, 0, 64, 56, 1, 0, 0, 0)
           + struct.pack("<IIQQQQQQ", 1, 5, 0, base, base, size, size, 0x1000) + code)  # fmt: skip
    probe = HOOK_OFF + (
        f"import os\nfd = os.memfd_create('program')\nos.write(fd, {elf!r})\n"
        "pid = os.fork()\nif pid == 0:\n    try:\n        os.execve(fd, ['program'], {})\n"
        "    finally:\n        os._exit(7)\n"
        "result = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])\n"
    )
    assert run_probe(pool, probe) == 255  # it ran (7: it did not), and chroot was refused
