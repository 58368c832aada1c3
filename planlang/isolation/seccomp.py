"""The seccomp layer of a plan's process: a system-call filter (docs/SECURITY.md, layer 4).

No socket, no new process (fork, vfork, exec, clone of a process), no signal to another
process, no ptrace, no io_uring, no new namespace or landlock ruleset; a thread may still be
made. x86_64 only: elsewhere the layer is reported missing.
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
}  # fmt: skip
_CLONE, _CLONE3, _CLONE_THREAD = 56, 435, 0x00010000
_RET_ALLOW, _RET_ERRNO, _RET_KILL = 0x7FFF0000, 0x00050000, 0x80000000
_EPERM, _ENOSYS = 1, 38


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
                                  "processes, ptrace or io_uring")  # fmt: skip


def program() -> tuple[Any, Any]:
    """The filter, as the kernel takes it: (the instructions, the sock_fprog that points at
    them; both must stay alive until the filter is loaded)."""
    ld_abs, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06
    denied = sorted(_DENY)
    base = 4 + len(denied)  # the clone test; then allow, deny (EPERM) and ENOSYS at the end
    allow, deny, nosys = base + 4, base + 5, base + 6

    def jump(at: int, target: int) -> int:  # BPF jumps count from the next instruction
        return target - (at + 1)

    program = [
        _bpf(ld_abs, 0, 0, 4),  # seccomp_data.arch
        _bpf(jeq, 1, 0, 0xC000003E),  # AUDIT_ARCH_X86_64, else kill
        _bpf(ret, 0, 0, _RET_KILL),
        _bpf(ld_abs, 0, 0, 0),  # seccomp_data.nr
    ]
    program += [_bpf(jeq, jump(4 + i, deny), 0, nr) for i, nr in enumerate(denied)]
    program += [
        _bpf(jeq, 0, jump(base, base + 3), _CLONE),
        _bpf(ld_abs, 0, 0, 16),  # clone's flags (args[0], low word): a thread, not a process
        _bpf(jset, jump(base + 2, allow), jump(base + 2, deny), _CLONE_THREAD),
        _bpf(jeq, jump(base + 3, nosys), 0, _CLONE3),  # flags out of reach: glibc falls back
        _bpf(ret, 0, 0, _RET_ALLOW),
        _bpf(ret, 0, 0, _RET_ERRNO | _EPERM),
        _bpf(ret, 0, 0, _RET_ERRNO | _ENOSYS),
    ]
    body = b"".join(program)
    filters = ctypes.create_string_buffer(body, len(body))
    fprog = struct.pack("<HxxxxxxQ", len(program), ctypes.addressof(filters))
    return filters, ctypes.create_string_buffer(fprog, len(fprog))
