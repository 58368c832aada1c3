"""Who a plan's process is to the kernel: its own uid, user and IPC namespaces, no keys.

The kernel lets a process act on every process and file of its own uid (prlimit, setpriority,
chmod, utime, F_SETOWN signals, System V segments: REDTEAM 1, 2, 3, 11, 18). A user namespace
entered without a uid map keeps the host's uid, root here; so a fork, while it is still root,
takes a kernel uid of its own (``UID_BASE`` plus its pid: unique among live processes, so one
plan's process cannot act on another's either) and drops every capability, then enters a user
namespace that maps only that uid, with a fresh IPC namespace in it (its System V objects die
with it) and a mount namespace whose only change is a tmpfs over the scratch directory, bounded
in bytes and files. ``RLIMIT_NPROC`` then counts only this process's threads (``confine``).
That tmpfs then becomes its whole file tree (``own root``: pivot_root into it, the host's tree
detached), and it drops every capability it had in its namespaces: no host path resolves, so
it cannot stat, list or readlink the host's files (its /proc included), and it cannot mount,
chroot or pivot its way back.

The fork server, once: a fresh network namespace (as root it needs no user namespace, which
would leave its forks no uid to map) and a fresh, empty session keyring (REDTEAM 12), so no key
of the host's is possessed by any fork.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct

from planlang.isolation.syscalls import _X86_64, Layer, _prctl, _syscall

__all__ = [
    "SCRATCH_BYTES",
    "SCRATCH_FILES",
    "UID_BASE",
    "own_uid",
    "rooted",
    "server_namespaces",
]

_CLONE_NEWUSER, _CLONE_NEWNET, _CLONE_NEWIPC = 0x10000000, 0x40000000, 0x08000000
_CLONE_NEWNS, _MOUNT, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 0x00020000, 165, 2, 4, 8
_QUOTA, _ROOT = "scratch quota", "own root"
# What the scratch directory holds at most (RAM: a tmpfs), in bytes and in files
SCRATCH_BYTES, SCRATCH_FILES = 2**24, 4096
_UNSHARE, _KEYCTL, _KEYCTL_JOIN_SESSION_KEYRING, _PR_SET_DUMPABLE = 272, 250, 1, 4
_PIVOT_ROOT, _UMOUNT2, _MNT_DETACH, _CAPSET, _CAP_VERSION_3 = 155, 166, 2, 126, 0x20080522
_NESTED_LIMIT = "/proc/sys/user/max_user_namespaces"  # this process's own user namespace's
# PR_SET_SECUREBITS: SECBIT_NOROOT and SECBIT_NO_CAP_AMBIENT_RAISE on, SECBIT_KEEP_CAPS off,
# each locked
_PR_SET_SECUREBITS, _NO_ROOT_LOCKED = 28, 0b11100011
# capset's arguments, made once (a fork only reads them): the header (version, pid 0: itself),
# then effective, permitted and inheritable sets, two words each: all empty
_NO_CAPABILITIES = (
    ctypes.create_string_buffer(struct.pack("<Ii", _CAP_VERSION_3, 0), 8),
    ctypes.create_string_buffer(24),
)
# Above the ranges systemd hands to users and containers (below 0x70000000), below 2**31.
UID_BASE = 0x7F000000
_own: list[int] = []  # the uid this process took, once it has
_rooted: list[str] = []  # the host's path of the scratch tmpfs, once it is this process's root


def server_namespaces() -> list[Layer]:
    """In the fork server, once: a fresh network namespace and session keyring."""
    if not _X86_64:
        why = f"not tried on {platform.machine()}"
        return [Layer("network namespace", False, why), Layer("keyring", False, why)]
    return [_network(), _keyring()]


def _network() -> Layer:
    root = os.geteuid() == 0
    try:
        if root:
            _syscall(_UNSHARE, ctypes.c_int(_CLONE_NEWNET))
        else:  # unprivileged: only inside a user namespace of its own, mapped to itself
            uid, gid = os.geteuid(), os.getegid()
            _syscall(_UNSHARE, ctypes.c_int(_CLONE_NEWUSER | _CLONE_NEWNET))
            _map_self(uid, gid)
    except OSError as error:
        return Layer("network namespace", False, f"unshare failed: {error.strerror}")
    return Layer("network namespace", True, "a fresh one: no interface, not even loopback")


def _keyring() -> Layer:
    try:
        _syscall(_KEYCTL, ctypes.c_int(_KEYCTL_JOIN_SESSION_KEYRING), None)
    except OSError as error:
        return Layer("keyring", False, f"the host's session keyring kept: {error.strerror}")
    return Layer("keyring", True, "a fresh, empty session keyring: none of the host's keys")


def own_uid(scratch: str, root: bool = True) -> list[Layer]:
    """In a fresh fork, first: a uid of its own (as root), then its own user and IPC
    namespaces. The scratch directory is made the new uid's: nothing else is writable.
    ``root``: then make the scratch tmpfs its root (False: tests of the other layers alone)."""
    if not _X86_64:
        why = f"not tried on {platform.machine()}"
        names = ("own uid", "user namespace", "IPC namespace", _QUOTA, _ROOT)
        return [Layer(name, False, why) for name in names]
    switched = _switch(scratch)
    *entered, quota = _user_namespace(scratch)
    if not root:
        return [switched, *entered, quota, Layer(_ROOT, False, "left out (tests only)")]
    # the tmpfs was mounted in the user and mount namespaces this process made, never else
    why = "no tmpfs of its own to be its root" if not quota.active else ""
    return [switched, *entered, quota, Layer(_ROOT, False, why) if why else _own_root(scratch)]


def rooted() -> str | None:
    """The host's path of this process's scratch directory, if that is its root now."""
    return _rooted[0] if _rooted else None


def _own_root(scratch: str) -> Layer:
    """The scratch tmpfs (this process's working directory) becomes its root, and the
    host's tree, stacked over it by pivot_root, is detached: no host path resolves from here
    (this process holds no descriptor of a host directory). Then every capability goes (in
    its own namespaces it could otherwise mount, chroot or unmount), for good (no program it
    executes as root gets them back), and first no user namespace may be made inside its own
    (one would give those capabilities back). The memory meter's /proc/self/statm is opened
    before: it stays open, the only file of /proc it reads. Only ever called inside the user
    namespace this process made (its tmpfs needs it): the limit it sets is that namespace's."""
    from planlang.sandbox import limits

    limits._resident_bytes()
    lacks = []
    try:  # per user namespace, counting those nested in it: none
        fd = os.open(_NESTED_LIMIT, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)
    except OSError as error:
        lacks.append(f"a user namespace nested in its own gives them back ({error.strerror})")
    try:
        _syscall(_PIVOT_ROOT, b".", b".")
        _syscall(_UMOUNT2, b".", ctypes.c_int(_MNT_DETACH))
        os.chdir("/")
    except OSError as error:
        return Layer(_ROOT, False, f"pivot_root into its scratch failed ({error.strerror}): "
                     "it can stat and readlink the host's paths")  # fmt: skip
    _rooted[:] = [scratch]
    try:  # root's execve would give every capability back: no longer, for good
        _prctl(_PR_SET_SECUREBITS, ctypes.c_ulong(_NO_ROOT_LOCKED))
        _syscall(_CAPSET, *_NO_CAPABILITIES)
    except OSError as error:
        lacks.insert(0, f"its capabilities in its namespaces stay ({error.strerror})")
    if lacks:
        return Layer(_ROOT, False, "its scratch is its root, but " + "; ".join(lacks) + ": "
                     "it could mount a tmpfs of any size, or chroot")  # fmt: skip
    return Layer(_ROOT, True, "its scratch tmpfs is its whole file tree: no host path "
                 "resolves (no stat, list or readlink of the host's files, /proc included); "
                 "no capability left, and no user namespace can be nested to regain one"
                 )  # fmt: skip


def _switch(scratch: str) -> Layer:
    uid = os.geteuid()
    if uid != 0:
        why = f"runs as the host's uid {uid} (only root can give it one of its own)"
        return Layer("own uid", False, why + ": seccomp alone keeps it off the host's processes")
    own = UID_BASE + os.getpid()
    try:
        os.chown(scratch, own, own)
        os.setgroups([])
        os.setresgid(own, own, own)
        os.setresuid(own, own, own)  # every capability goes with root
    except OSError as error:
        return Layer("own uid", False, f"could not take uid {own}: {error.strerror}")
    # a credential change makes a process non-dumpable: its /proc/self files become root's,
    # and its own uid_map unwritable. Dumpable again: nothing else runs as this uid
    _prctl(_PR_SET_DUMPABLE, ctypes.c_ulong(1))
    _own[:] = [own]
    return Layer("own uid", True, f"kernel uid {own}, no capability: no other process or "
                 "file of the host's is its own")  # fmt: skip


def _user_namespace(scratch: str) -> list[Layer]:
    uid, gid = os.geteuid(), os.getegid()
    try:
        _syscall(_UNSHARE, ctypes.c_int(_CLONE_NEWUSER | _CLONE_NEWIPC | _CLONE_NEWNS))
    except OSError as error:
        why = f"unshare failed: {error.strerror}"
        return [Layer(name, False, why) for name in ("user namespace", "IPC namespace", _QUOTA)]
    try:
        _map_self(uid, gid)
        mapped = f"mapping only uid {uid}"
    except OSError as error:
        mapped = f"without a uid map ({error.strerror})"
    return [*_namespaces_entered(mapped), _scratch_quota(scratch)]


def _scratch_quota(scratch: str) -> Layer:
    """A tmpfs of its own over the scratch directory, in its own mount namespace: bounded in
    bytes and files (REDTEAM 8), gone with the process (the host's directory stays empty)."""
    options = f"size={SCRATCH_BYTES},nr_inodes={SCRATCH_FILES},mode=0700".encode()
    try:
        _syscall(_MOUNT, b"planlang-scratch", os.fsencode(scratch), b"tmpfs",
                 ctypes.c_ulong(_MS_NOSUID | _MS_NODEV | _MS_NOEXEC), options)  # fmt: skip
        os.chdir(scratch)  # the mount, not the directory beneath it
    except OSError as error:
        return Layer(_QUOTA, False, f"no tmpfs of its own ({error.strerror}): the host's disk, "
                     "one file bounded by RLIMIT_FSIZE, their number not")  # fmt: skip
    detail = f"a tmpfs of its own: {SCRATCH_BYTES >> 20} MiB, {SCRATCH_FILES} files at most"
    return Layer(_QUOTA, True, detail)


def _namespaces_entered(mapped: str) -> list[Layer]:
    return [
        Layer(
            "user namespace",
            True,
            f"its own, {mapped}: no capability over the host's processes or files",
        ),  # fmt: skip
        Layer(
            "IPC namespace",
            True,
            "a fresh one: no System V object of the host's, and its own die with it",
        ),  # fmt: skip
    ]


def _map_self(uid: int, gid: int) -> None:
    """Map 0 in the user namespace just entered to ``uid``/``gid`` (a process may map its
    own ids without privilege, once setgroups is denied)."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        fd = os.open(f"/proc/self/{name}", os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)


def has_own_uid() -> bool:
    """True once this process runs as a uid no other process has (``RLIMIT_NPROC`` then
    counts only its own threads)."""
    return bool(_own)
