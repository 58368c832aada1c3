"""The seccomp layer of a plan's process: a system-call filter (docs/SECURITY.md, layer 4).

No socket, no new process (fork, vfork, exec, clone of a process), no signal to another
process (fcntl's F_SETOWN and F_SETSIG included), no ptrace, no io_uring, no new namespace or
landlock ruleset, no mount, chroot or pivot_root (the new mount API included), no keys
(keyctl), no System V objects or POSIX queues, no memfd, no chmod or utime of any file, no
perf events, bpf or userfaultfd, no pidfd of another process, and limits, niceness and
scheduling (prlimit64, setpriority, sched_set*, ioprio_set, and their reading counterparts)
of itself only; a thread may still be made. The x32 numbers are refused. x86_64 only: elsewhere the
layer is reported missing.
"""

from __future__ import annotations

import ctypes
import platform
import struct
import sys
from typing import Any

from planlang.isolation.syscalls import _X86_64, Layer, _prctl, _syscall

__all__ = ["load", "program"]

_DENY = {
    41: "socket", 53: "socketpair", 57: "fork", 58: "vfork", 59: "execve", 322: "execveat",
    62: "kill", 200: "tkill", 234: "tgkill", 101: "ptrace", 310: "process_vm_readv",
    311: "process_vm_writev", 425: "io_uring_setup", 424: "pidfd_send_signal",
    129: "rt_sigqueueinfo", 297: "rt_tgsigqueueinfo", 165: "mount", 308: "setns",
    272: "unshare", 444: "landlock_create_ruleset",
    248: "add_key", 249: "request_key", 250: "keyctl",  # the host's keys (REDTEAM 12)
    29: "shmget", 64: "semget", 68: "msgget",  # System V objects (REDTEAM 3)
    90: "chmod", 91: "fchmod", 268: "fchmodat", 452: "fchmodat2",  # metadata landlock
    132: "utime", 235: "utimes", 261: "futimesat", 280: "utimensat",  # spares (REDTEAM 11)
    438: "pidfd_getfd", 440: "process_madvise", 312: "kcmp", 256: "migrate_pages",
    279: "move_pages",
    # the mount tree, where landlock and its own root fail: chroot's escape, a tmpfs of any
    # size (memory outside RLIMIT_AS), a tree of the host's cloned (session 9's red team)
    155: "pivot_root", 161: "chroot", 166: "umount2", 428: "open_tree", 429: "move_mount",
    430: "fsopen", 431: "fsconfig", 432: "fsmount", 433: "fspick", 442: "mount_setattr",
    # memory outside RLIMIT_AS, and kernel objects a plan's process never needs
    319: "memfd_create", 240: "mq_open", 298: "perf_event_open", 321: "bpf", 323: "userfaultfd",
    303: "name_to_handle_at", 304: "open_by_handle_at", 434: "pidfd_open",
    103: "syslog",  # the host's kernel log, where dmesg_restrict is 0
    448: "process_mrelease",
}  # fmt: skip
# Calls allowed only on the process itself (pid 0), where the target is an argument the
# filter sees (REDTEAM 1): (syscall, {argument: the only value allowed}).
_SELF_ONLY = {
    302: {0: 0},  # prlimit64(pid)
    142: {0: 0}, 144: {0: 0}, 203: {0: 0}, 314: {0: 0},  # sched_setparam, _setscheduler, ...
    141: {0: 0, 1: 0},  # setpriority(PRIO_PROCESS, 0)
    251: {0: 1, 1: 0},  # ioprio_set(IOPRIO_WHO_PROCESS, 0)
    # what they read of another process tells which pids live on the host (session 9)
    140: {0: 0, 1: 0}, 252: {0: 1, 1: 0},  # getpriority, ioprio_get: of itself
    143: {0: 0}, 145: {0: 0}, 148: {0: 0}, 204: {0: 0}, 315: {0: 0},  # sched_get*
    121: {0: 0}, 124: {0: 0},  # getpgid, getsid
}  # fmt: skip
_FCNTL, _FCNTL_DENIED = 72, (8, 10, 15)  # F_SETOWN, F_SETSIG, F_SETOWN_EX: signals out (REDTEAM 2)
_X32 = 0x40000000  # the x32 ABI's numbers: the same calls under other numbers
_FIRST_FILTERED = 29  # every call numbered below it is allowed (shmget is the first denied)
_CLONE, _CLONE3, _CLONE_THREAD = 56, 435, 0x00010000
_RET_ALLOW, _RET_ERRNO, _RET_KILL = 0x7FFF0000, 0x00050000, 0x80000000
_EPERM, _ENOSYS = 1, 38
_LD, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06


def _bpf(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def load(prepared: tuple[Any, Any] | None = None) -> Layer:
    """Load the filter into this process (``prepared``: ``program()``, made earlier)."""
    if not _X86_64 or not sys.platform.startswith("linux"):
        return Layer("seccomp", False, f"no filter for {platform.machine()}")
    _filters, fprog_buffer = prepared or program()
    try:
        _prctl(38, ctypes.c_ulong(1))  # PR_SET_NO_NEW_PRIVS
        _syscall(157, ctypes.c_int(22), ctypes.c_ulong(2), fprog_buffer, ctypes.c_ulong(0),
                 ctypes.c_ulong(0))  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER  # fmt: skip
    except OSError as error:
        return Layer("seccomp", False, f"the filter could not be loaded: {error.strerror}")
    return Layer("seccomp", True, "no socket, fork, exec, process clone, signals to other "
                 "processes (F_SETOWN included), ptrace, io_uring, mount or chroot, keys, "
                 "System V objects, memfd, chmod or utime; limits and scheduling of itself "
                 "only")  # fmt: skip


def program() -> tuple[Any, Any]:
    """The filter, as the kernel takes it: (the instructions, the sock_fprog that points at
    them; both must stay alive until the filter is loaded)."""
    body = b"".join(_bpf(*op) for op in _assemble(_instructions()))
    filters = ctypes.create_string_buffer(body, len(body))
    fprog = struct.pack("<HxxxxxxQ", len(body) // 8, ctypes.addressof(filters))
    return filters, ctypes.create_string_buffer(fprog, len(fprog))


def _arg(n: int) -> int:
    return 16 + 8 * n  # seccomp_data.args[n], its low word (pid_t and int are 32 bits)


def _instructions() -> list[tuple[Any, ...]]:
    """The program with symbolic jumps: (code, true target, false target, k), a target being
    a label or None (the next instruction); ("label", name) marks where a label is."""
    ops: list[tuple[Any, ...]] = [
        (_LD, None, None, 4),  # seccomp_data.arch
        (_JEQ, None, "kill", 0xC000003E),  # AUDIT_ARCH_X86_64, else kill
        (_LD, None, None, 0),  # seccomp_data.nr
        (_JGE, "deny", None, _X32),
        (_JGE, None, "allow", _FIRST_FILTERED),  # read, write, poll, mmap...: at once
    ]
    ops += [(_JEQ, "deny", None, nr) for nr in sorted(_DENY)]
    ops += [(_JEQ, f"self{nr}", None, nr) for nr in sorted(_SELF_ONLY)]
    ops += [
        (_JEQ, "fcntl", None, _FCNTL),
        (_JEQ, "clone", None, _CLONE),
        (_JEQ, "nosys", "allow", _CLONE3),  # clone3's flags are out of reach: glibc falls back
    ]
    for nr, allowed in sorted(_SELF_ONLY.items()):
        ops.append(("label", f"self{nr}"))
        for n, value in sorted(allowed.items()):
            ops += [(_LD, None, None, _arg(n)), (_JEQ, None, "deny", value)]
        ops.append((_RET, None, None, _RET_ALLOW))
    ops += [("label", "fcntl"), (_LD, None, None, _arg(1))]
    ops += [(_JEQ, "deny", None, command) for command in _FCNTL_DENIED]
    ops += [
        (_RET, None, None, _RET_ALLOW),
        ("label", "clone"),
        (_LD, None, None, _arg(0)),  # clone's flags: a thread, not a process
        (_JSET, "allow", "deny", _CLONE_THREAD),
        ("label", "allow"), (_RET, None, None, _RET_ALLOW),
        ("label", "deny"), (_RET, None, None, _RET_ERRNO | _EPERM),
        ("label", "nosys"), (_RET, None, None, _RET_ERRNO | _ENOSYS),
        ("label", "kill"), (_RET, None, None, _RET_KILL),
    ]  # fmt: skip
    return ops


def _assemble(ops: list[tuple[Any, ...]]) -> list[tuple[int, int, int, int]]:
    """Labels resolved to BPF's forward jumps (counted from the next instruction, at most
    255: the filter is far shorter)."""
    where: dict[str, int] = {}
    code: list[tuple[Any, ...]] = []
    for op in ops:
        if op[0] == "label":
            where[op[1]] = len(code)
        else:
            code.append(op)

    def offset(at: int, target: Any) -> int:
        jump = 0 if target is None else where[target] - (at + 1)
        assert 0 <= jump <= 255, (target, jump)
        return jump

    return [(c, offset(i, jt), offset(i, jf), k) for i, (c, jt, jf, k) in enumerate(code)]
