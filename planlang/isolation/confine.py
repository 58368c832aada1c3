"""The operating system's confinement of a plan's process, one layer at a time.

Each layer is tried when the child starts, before it has seen any plan, and reported as
active or not with the reason; none is skipped silently (``planlang doctor`` prints them):

- ``own uid``, ``user namespace``, ``IPC namespace``, ``scratch quota``, ``own root``
  (``identity``): a kernel uid no other process has, no capability, in a user namespace
  mapping only that uid and a fresh IPC namespace, its scratch tmpfs its whole file tree;
  ``network namespace`` and ``keyring``: the fork server's, fresh and empty.
- ``landlock``: no file may be written, made or removed outside the scratch directory, no
  program executed, no TCP connection made (ABI 4+), and no other process traced.
- ``seccomp``: a system-call filter: no socket, no new process (fork, vfork, exec, clone of a
  process), no signal to another process, no ptrace, no io_uring, no keys, no System V
  objects, no chmod or utime, limits and scheduling of itself only (``seccomp``).
- ``audit hook``: the last layer, in Python: once the plan runs, opening a file for writing
  outside the scratch directory, reading /proc of another process, spawning, sockets, ctypes
  and changing limits all raise.
- ``resource limits`` (set per plan): address space, CPU seconds, open files, file size, no
  core dumps, and threads (RLIMIT_NPROC, only where the process has its own uid: it counts
  every task of the uid). ``processes``: the seccomp filter.
- ``environment``: the child starts with an empty environment (set by the host).
"""

from __future__ import annotations

import _signal
import ctypes
import os
import platform
import resource
import signal
import struct
import sys
from typing import Any

from planlang.isolation import identity, seccomp
from planlang.isolation.syscalls import _X86_64, Layer, _prctl, _syscall

__all__ = ["Layer", "enter", "limit_files", "limit_resources", "prepare", "strict", "used"]


# -- namespaces: identity.py (the fork server enters its own through this name) -----------------

_namespaces = identity.server_namespaces


# -- landlock ----------------------------------------------------------------------------------

_LL_EXECUTE, _LL_WRITE_FILE = 1 << 0, 1 << 1
_LL_WRITES = sum(1 << n for n in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12))  # write, remove, make
_LL_ABI_EXTRA = {2: 1 << 13, 3: 1 << 14, 5: 1 << 15}  # refer, truncate, ioctl on devices
_LL_SCRATCH = sum(1 << n for n in (1, 4, 5, 7, 8)) | (1 << 14)  # write, remove, mkdir, mkreg, trunc
_LL_READ_FILE, _LL_READ_DIR = 1 << 2, 1 << 3
_READABLE_DEVICES = ("/dev/null", "/dev/urandom", "/dev/random", "/proc/self")
_PER_PROCESS = frozenset({"/proc/self"})  # resolved when opened: each process opens its own


def _readable() -> list[str]:
    """What the child may still read: the code it runs (the standard library, and the
    package of every module it has imported), a few devices, its own /proc. Nothing else,
    so no file of the host's (a project's .env, a key file) can be read."""
    import sysconfig

    found = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib")}
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not isinstance(file, str):
            continue
        file = os.path.abspath(file)
        root = os.path.dirname(file)  # up to the folder the top-level name was imported from
        for _ in range(module.__name__.count(".") + (os.path.basename(file) == "__init__.py")):
            root = os.path.dirname(root)
        package = os.path.join(root, module.__name__.partition(".")[0])
        found.add(package if os.path.isdir(package) else file)
    found.update(p for p in _READABLE_DEVICES if os.path.exists(p))
    return _outermost(found)


def _outermost(paths: set[str]) -> list[str]:
    """The paths, less those beneath another of them (one landlock rule covers a tree; each
    rule costs an open and a system call in every child)."""
    kept: list[str] = []
    for path in sorted(paths):
        if not any(path.startswith(os.path.join(parent, "")) for parent in kept):
            kept.append(path)
    return kept


def _rule(path: str, rights: int) -> tuple[int, Any]:
    """(an O_PATH descriptor of ``path``, the packed rule that grants ``rights`` beneath it)."""
    directory = os.path.isdir(path)
    fd = os.open(path, os.O_PATH | (os.O_DIRECTORY if directory else 0))
    if not directory:
        rights &= ~(_LL_READ_DIR | _LL_SCRATCH)  # a file takes file rights only
    rule = struct.pack("<Qi", rights, fd)  # landlock_path_beneath_attr, packed
    return fd, ctypes.create_string_buffer(rule, len(rule))


def _allow(ruleset: int, path: str, rights: int) -> None:
    fd, buffer = _rule(path, rights)
    try:
        _add_rule(ruleset, buffer)
    finally:
        os.close(fd)


def _add_rule(ruleset: int, buffer: Any) -> None:
    _syscall(445, ctypes.c_int(ruleset), ctypes.c_int(1), buffer, ctypes.c_uint32(0))


def prepare() -> None:
    """In the fork server, once: what every child's confinement needs that is the same for
    all (the readable paths opened, their rules packed, the system-call filter built), so a
    fork only makes the system calls (2 ms of Python in each fork before)."""
    _state["readable"] = _readable()
    _state["seccomp"] = seccomp.program()
    if _X86_64:
        try:
            _state["abi"] = _syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
        except OSError:
            return
        read = _LL_READ_FILE | _LL_READ_DIR
        # /proc/self opened here would be the server's own: each fork opens its own
        _state["rules"] = [
            _rule(path, read) for path in _state["readable"] if path not in _PER_PROCESS
        ]


def _landlock(scratch: str) -> Layer:
    if not _X86_64:
        return Layer("landlock", False, f"not tried on {platform.machine()}")
    try:  # the version: the fork server's (the same kernel), else asked now
        abi = _state.get("abi") or _syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except OSError as error:
        return Layer("landlock", False, f"not available: {error.strerror}")
    handled = _LL_EXECUTE | _LL_WRITES | _LL_READ_FILE | _LL_READ_DIR
    for level, right in _LL_ABI_EXTRA.items():
        if abi >= level:
            handled |= right
    net = 3 if abi >= 4 else 0  # bind and connect TCP
    scoped = 3 if abi >= 6 else 0  # signals and abstract unix sockets stay inside
    attr = struct.pack("<QQQ", handled, net, scoped)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    buffer = ctypes.create_string_buffer(attr[:size], size)
    prepared = _state.pop("rules", None)  # the fork server's, for this fork to use once
    try:
        ruleset = _syscall(444, buffer, ctypes.c_size_t(size), ctypes.c_uint32(0))
        read = _LL_READ_FILE | _LL_READ_DIR
        _allow(ruleset, scratch, (_LL_SCRATCH | read) & handled)
        readable = _state.get("readable") or _readable()
        if identity.rooted() is not None:  # no host path resolves: no read rule needed
            readable = []
        elif prepared is not None:
            for _fd, rule in prepared:
                _add_rule(ruleset, rule)
            for path in _PER_PROCESS & set(readable):
                _allow(ruleset, path, read)
        else:
            for path in readable:
                _allow(ruleset, path, read)
        _prctl(38, ctypes.c_ulong(1))  # PR_SET_NO_NEW_PRIVS
        _syscall(446, ctypes.c_int(ruleset), ctypes.c_uint32(0))  # restrict self
        os.close(ruleset)
    except OSError as error:
        return Layer("landlock", False, f"could not be applied: {error.strerror}")
    finally:
        for fd, _rule_buffer in prepared or ():
            os.close(fd)  # the paths stay readable; their descriptors need not stay open
    network = ", no TCP bind or connect" if net else ""
    network += ", no signals or abstract sockets out" if scoped else ""
    reads = f"reads only of the code it runs ({len(readable)} paths)" if readable else (
        "reads only there (its root)")  # fmt: skip
    detail = f"ABI {abi}: writes only in the scratch directory, {reads}, no exec{network}"
    return Layer("landlock", True, detail)


# -- the audit hook ----------------------------------------------------------------------------

_state: dict[str, Any] = {"strict": False, "scratch": "/nonexistent/"}
_DENIED_EVENTS = ("subprocess.", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
                  "os.fork", "os.forkpty", "os.kill", "os.killpg", "pty.", "socket.",
                  "ctypes.", "resource.setrlimit", "resource.prlimit", "os.remove",
                  "os.rename", "os.rmdir", "os.mkdir", "os.symlink", "os.link", "os.truncate",
                  "os.chmod", "os.chown", "os.utime", "os.mkfifo", "os.mknod", "shutil.",
                  "os.chdir", "os.chroot", "sys.setrecursionlimit", "webbrowser.")  # fmt: skip
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _state["strict"]:
        return
    if event == "open":
        _check_open(args)
    elif event.startswith(_DENIED_EVENTS):
        raise PermissionError(f"planlang's audit hook denies {event} in a plan's process.")


def _check_open(args: tuple[Any, ...]) -> None:
    path, mode, flags = (tuple(args) + (None, None, None))[:3]
    if isinstance(path, int):
        return  # an open file descriptor, already allowed when it was opened
    text = os.fsdecode(path) if isinstance(path, str | bytes) else str(path)
    full = os.path.abspath(text)
    writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
        isinstance(flags, int) and flags & _WRITE_FLAGS
    )
    inside = full.startswith(_state["scratch"])
    if writes and not inside:
        raise PermissionError(f"planlang's audit hook denies writing {full!r}.")
    if full.startswith("/proc/") and full != "/proc/self/statm":
        raise PermissionError(f"planlang's audit hook denies reading {full!r}.")


def _audit_hook(scratch: str) -> Layer:
    _state["scratch"] = os.path.join(os.path.abspath(scratch), "")
    if not _state.get("installed"):  # a fork of the fork server has it already
        sys.addaudithook(_audit)
        _state["installed"] = True
    return Layer("audit hook", True, "denies writes outside scratch, /proc, spawning, sockets, "
                                     "ctypes and limit changes once the plan runs")  # fmt: skip


def strict() -> None:
    """From now on the audit hook denies (called just before the plan runs)."""
    _state["strict"] = True


# -- entering ----------------------------------------------------------------------------------


def enter(
    scratch: str, without: tuple[str, ...] = (), namespaces: list[Layer] | None = None
) -> list[Layer]:
    """Confine this (still single-threaded) process; what each layer did. ``without`` leaves
    layers out, for the tests that show each layer holding on its own; ``namespaces`` are
    those a fork server entered already (a fork inherits them)."""
    # a file past RLIMIT_FSIZE fails, not kills. The C function, not signal.signal: its
    # wrapper makes an enum of the result, which in a fresh fork copies some 18 pages (90 µs)
    _signal.signal(signal.SIGXFSZ, _signal.SIG_IGN)
    root = "own root" not in without
    steps: dict[str, Any] = {
        "user namespace": lambda: identity.own_uid(scratch, root),
        "network namespace": (lambda: namespaces) if namespaces is not None else _namespaces,
        "landlock": lambda: _landlock("/" if identity.rooted() else scratch),
        "seccomp": lambda: seccomp.load(_state.get("seccomp")),
        "audit hook": lambda: _audit_hook("/" if identity.rooted() else scratch),
        "resource limits": _resource_limits,
    }
    passed = sorted(set(os.environ) - _OWN_VARIABLES)
    layers = [
        Layer("process", True, f"a separate process (pid {os.getpid()})"),
        Layer(
            "environment",
            not passed,
            "none of the host's variables"
            if not passed
            else f"variables passed in: {', '.join(passed)}",
        ),  # fmt: skip
    ]
    for name, step in steps.items():
        left = [Layer(n, False, "left out (tests only)") for n in _STEP_LAYERS.get(name, [name])]
        done = left if name in without else step()
        layers += done if isinstance(done, list) else [done]
    # the fork server's descriptors of the readable paths, where landlock did not take them:
    # a descriptor of a host directory leads out of its own root ('..' from it)
    for fd, _rule_buffer in _state.pop("rules", None) or ():
        os.close(fd)
    return layers


# The layers of a step that reports more than one (all left out with it)
_STEP_LAYERS = {
    "user namespace": ["own uid", "user namespace", "IPC namespace", "scratch quota", "own root"]
}

# Set by planlang for the child (MALLOC_ARENA_MAX, PYTHONHASHSEED) or by Python itself
# (LC_CTYPE, when it coerces the C locale): none of them comes from the host's environment.
_OWN_VARIABLES = frozenset({"MALLOC_ARENA_MAX", "PYTHONHASHSEED", "LC_CTYPE"})


def _resource_limits() -> Layer:
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (OSError, ValueError) as error:
        return Layer("resource limits", False, f"setrlimit failed: {error}")
    return Layer("resource limits", True, "set for each plan: address space, CPU seconds, "
                 "open files, file size, no core dumps, threads (with its own uid)")  # fmt: skip


def used() -> list[float]:
    """[CPU seconds, address space in bytes] this process uses now. The file is read with
    os.open and pread, not open(): in a fresh fork the io objects copy some 20 pages more."""
    from planlang.sandbox.limits import _statm  # the meter's, open before the root changed

    usage = resource.getrusage(resource.RUSAGE_SELF)
    try:
        fd = _statm[0]
        if fd < 0:
            fd = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)
        try:
            virtual = int(os.pread(fd, 64, 0).split()[0]) * os.sysconf("SC_PAGE_SIZE")
        finally:
            if fd != _statm[0]:
                os.close(fd)
    except (OSError, ValueError, IndexError):
        virtual = 0
    return [usage.ru_utime + usage.ru_stime, virtual]


OPEN_FILES = 64
FILE_BYTES = 2**24
# Threads of a plan's process beyond those its run may start: the main thread, the channel's
# and lanes' readers, a deep-stack thread, and room (RLIMIT_NPROC counts every task of the uid)
THREAD_MARGIN = 16


def limit_files(open_files: int = OPEN_FILES, file_bytes: int = FILE_BYTES) -> None:
    """The limits that are the same for every plan: open files, file size, no core (a
    child sets them before it says ready; OSError or ValueError if the kernel refuses)."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def limit_resources(
    *,
    cpu_seconds: float,
    memory_bytes: int,
    open_files: int = OPEN_FILES,
    file_bytes: int = FILE_BYTES,
    base: list[float] | None = None,
    files: bool = True,
    threads: int | None = None,
) -> Layer:
    """Hard resource limits for one plan run, counted from what the process uses now, or
    from ``base`` (``used()`` of a moment ago: the child measures it before it says ready,
    so a plan's start does not wait for it). ``files=False``: ``limit_files`` was called
    already (the child does so before ready); only the plan's own limits are set here.
    ``threads``: how many the run may start; held to by ``RLIMIT_NPROC`` (plus
    ``THREAD_MARGIN``) where the process has a uid of its own, which it then counts alone."""
    cpu_used, virtual = base or used()
    cpu = int(cpu_used + cpu_seconds) + 1
    address = int(virtual) + memory_bytes
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_AS, (address, address))
        if files:
            limit_files(open_files, file_bytes)
        tasks = threads + THREAD_MARGIN if threads is not None and identity.has_own_uid() else 0
        if tasks:
            resource.setrlimit(resource.RLIMIT_NPROC, (tasks, tasks))
    except (OSError, ValueError) as error:
        return Layer("resource limits", False, f"setrlimit failed: {error}")
    detail = (
        f"CPU {cpu} s, address space {address >> 20} MiB, {open_files} open files, "
        f"files up to {file_bytes >> 20} MiB, no core" + (f", {tasks} threads" if tasks else "")
    )
    return Layer("resource limits", True, detail)
