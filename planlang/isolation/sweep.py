"""Scratch directories whose host died without its exit handlers, swept at a pool's start.

A pool removes its ready children's scratch directories when it closes (at exit); a host killed
by SIGKILL, a default SIGTERM or ``os._exit`` leaves them in the temporary directory. So each
is named for its host (``scratch_prefix``): its pid namespace, its pid and that pid's start
time (``/proc/<pid>/stat``), so a pid reused since is not taken for it. A pool starting sweeps
(``sweep``) the directories so named whose host no longer runs: never one of a live host (of
this pid namespace; another's is never touched), never through a symbolic link, and only
names of this pattern. Directories of the older name (no owner in it) are left as they are.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile

__all__ = ["PREFIX", "remove_tree", "scratch_prefix", "sweep"]

PREFIX = "planlang-plan-"
# PREFIX, then the pid namespace's inode, the host's pid and its start time, then mkdtemp's
_OWNED = re.compile(r"planlang-plan-(\d+)\.(\d+)\.(\d+)-[A-Za-z0-9_]{1,64}\Z")

_prefix: tuple[int, str] | None = None  # (the pid it was made for, the prefix)


def _namespace() -> int | None:
    """This process's pid namespace (its inode), or None without /proc."""
    try:
        link = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        return None
    found = re.fullmatch(r"pid:\[(\d+)\]", link)
    return int(found.group(1)) if found else None


def _started(pid: int) -> int | None:
    """When ``pid`` started (clock ticks after boot), or None if no such process runs."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            data = stat.read()
        # after the command's name (in parentheses, which may hold any byte): field 3 on
        return int(data[data.rindex(b")") + 2 :].split()[19])  # field 22, starttime
    except (OSError, ValueError, IndexError):
        return None


def scratch_prefix() -> str:
    """The prefix of this host's scratch directories: its owner in its name (PREFIX alone,
    never swept, where /proc cannot say who it is). Made again in a forked process."""
    global _prefix
    pid = os.getpid()
    if _prefix is None or _prefix[0] != pid:
        namespace, started = _namespace(), _started(pid)
        owned = namespace is not None and started is not None
        _prefix = (pid, f"{PREFIX}{namespace}.{pid}.{started}-" if owned else PREFIX)
    return _prefix[1]


def sweep(directory: str | None = None) -> list[str]:
    """Remove the scratch directories in ``directory`` (the temporary directory) whose host
    is dead; the paths removed. Never raises."""

    namespace = _namespace()
    if namespace is None:
        return []  # no /proc: nobody's liveness can be known
    removed = []
    try:
        entries = list(os.scandir(directory or tempfile.gettempdir()))
    except OSError:
        return []
    for entry in entries:
        owned = _OWNED.match(entry.name)
        if owned is None or int(owned.group(1)) != namespace:
            continue
        if _started(int(owned.group(2))) == int(owned.group(3)):
            continue  # its host runs
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
            os.rmdir(entry.path)  # a ready child's: empty
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            remove_tree(entry.path)  # a child of it wrote there (rm: links not followed)
        removed.append(entry.path)
    return removed


def remove_tree(path: str) -> None:
    """Remove a plan process's scratch tree, whatever it made there: GNU ``rm`` walks it by
    descriptors (any depth, symbolic links not followed), where Python 3.11's ``rmtree``
    takes a frame a level and fails past the recursion limit. Never raises."""
    try:
        subprocess.run(["rm", "-rf", "--one-file-system", "--", path], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                       timeout=600)  # fmt: skip  # noqa: S603, S607 - coreutils, no shell
    except (OSError, subprocess.SubprocessError):
        pass
    if os.path.lexists(path):  # no rm here: what Python can remove
        try:
            shutil.rmtree(path, ignore_errors=True)
        except RecursionError:
            pass
