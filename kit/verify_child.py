"""The child process of ``kit.verify``: run one checked library call under limits.

Run as ``python -I -B kit/verify_child.py`` with a JSON job on stdin; it imports nothing from the
project (``-I`` keeps the project off ``sys.path``). Before any library code runs it lowers its
own limits (address space, CPU seconds, open files, file size, processes; hard limits too, so
they cannot be raised again), points ``sys.path`` at the corpus copy, moves into the scratch
folder and installs an audit hook that refuses sockets, new processes, and files written
outside the scratch folder or read outside the library copy, the scratch folder and Python's
own installation. Its one line of output starts with a nonce the parent chose, so what the
library prints cannot pose as the result.
"""

from __future__ import annotations

import ast
import importlib
import io
import json
import os
import re
import resource
import signal
import sys
from typing import Any

BLOCKED_PREFIXES = (
    "socket.", "subprocess.", "ctypes.", "pty.", "urllib.", "http.", "ftplib.", "smtplib.",
    "imaplib.", "poplib.", "nntplib.", "telnetlib.", "webbrowser.", "winreg.", "_winapi.",
)  # fmt: skip
BLOCKED_EVENTS = frozenset({
    "os.system", "os.fork", "os.forkpty", "os.exec", "os.spawn", "os.posix_spawn", "os.kill",
    "os.killpg", "os.startfile", "os.setuid", "os.setgid", "sys.addaudithook",
    "resource.setrlimit", "resource.prlimit", "signal.pthread_kill",
    "sqlite3.enable_load_extension", "sqlite3.load_extension",
})  # fmt: skip
PATH_CHANGING_EVENTS = frozenset({
    "os.remove", "os.rename", "os.replace", "os.rmdir", "os.mkdir", "os.chmod", "os.chown",
    "os.link", "os.symlink", "os.truncate", "os.utime", "os.chflags", "os.lchflags",
    "os.mkfifo", "os.mknod", "os.setxattr", "os.removexattr", "shutil.rmtree",
    "shutil.copyfile", "shutil.copymode", "shutil.copystat", "shutil.move", "shutil.chown",
    "sqlite3.connect",  # SQLite opens and writes its files without an "open" event
})  # fmt: skip
PATH_READING_EVENTS = frozenset({"os.listdir", "os.scandir", "glob.glob", "os.getxattr"})
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
HIDDEN = "hidden"
ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # object addresses change from run to run


class CallTimeout(BaseException):
    """Raised by the alarm; a BaseException so the library's ``except Exception`` misses it."""


def main() -> None:
    job = json.loads(sys.stdin.read())
    _limit(job)
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)  # what the library prints goes nowhere, so it cannot flood the parent
    os.dup2(quiet, 2)
    sys.stdout = sys.stderr = io.StringIO()
    try:
        scratch, lib = os.path.realpath(job["scratch"]), os.path.realpath(job["lib"])
        os.chdir(scratch)
        readable = [lib, scratch, *_python_roots()]
        sys.path[:] = [lib, *(p for p in sys.path if p and _inside(os.path.realpath(p), readable))]
        sys.dont_write_bytecode = True
        args = [ast.literal_eval(text) for text in job["args"]]
        kwargs = {name: ast.literal_eval(text) for name, text in job["kwargs"].items()}
        sys.addaudithook(_hook(scratch, readable))
    except Exception as error:  # the sandbox, not the call, failed: the parent says "not run"
        outcome, actual = "setup", f"the sandbox could not be set up: {_describe(error)}"
    else:
        outcome, actual = _call(job, args, kwargs)
    channel.write(job["nonce"] + json.dumps({"outcome": outcome, "actual": actual}) + "\n")
    channel.flush()
    os._exit(0)  # skip interpreter teardown: library finalizers have nothing left to say


def _limit(job: dict[str, Any]) -> None:
    memory, cpu = int(job["memory_bytes"]), int(job["cpu_seconds"])
    for kind, value in (
        (resource.RLIMIT_AS, memory),
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_NOFILE, int(job["open_files"])),
        (resource.RLIMIT_FSIZE, int(job["file_bytes"])),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NPROC, 0),  # no new processes or threads (not enforced for root)
    ):
        hard = value + 1 if kind == resource.RLIMIT_CPU else value  # SIGXCPU first, then KILL
        resource.setrlimit(kind, (value, hard))


def _python_roots() -> list[str]:
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    return [os.path.realpath(p) for p in prefixes if os.path.realpath(p) != "/"]


def _inside(path: str, roots: list[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _hook(scratch: str, readable: list[str]) -> Any:
    def refuse(event: str, detail: object = "") -> None:
        raise PermissionError(f"refused by the verification sandbox: {event} {detail}".strip())

    def where(path: object) -> str | None:
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if isinstance(path, os.PathLike):
            path = os.fspath(path)
        return os.path.realpath(path) if isinstance(path, str) else None

    def check_read(event: str, path: object) -> None:
        place = where(path)
        if place is None:
            return  # a file descriptor: already open, so already allowed
        if HIDDEN in place.split("/") or not _inside(place, readable):
            refuse(event, place)

    def check_write(event: str, path: object) -> None:
        place = where(path)
        if place is not None and not _inside(place, [scratch]):
            refuse(event, place)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in BLOCKED_EVENTS or event.startswith(BLOCKED_PREFIXES):
            refuse(event)
        elif event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & WRITE_FLAGS
            )
            (check_write if writing else check_read)(event, path)
        elif event in PATH_CHANGING_EVENTS:
            for arg in args:
                if arg in (":memory:", b":memory:", ""):
                    continue  # SQLite's in-memory database touches no file
                if isinstance(arg, str | bytes | os.PathLike):
                    check_write(event, arg)
        elif event in PATH_READING_EVENTS and args:
            check_read(event, args[0])

    return hook


def _call(job: dict[str, Any], args: list[Any], kwargs: dict[str, Any]) -> tuple[str, str]:
    limit = int(job["max_repr"])

    def alarm(signum: int, frame: Any) -> None:
        raise CallTimeout

    signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, float(job["timeout"]))
    try:
        target: Any = importlib.import_module(job["module"])
        for part in job["target"]:
            target = getattr(target, part)
        value = target(*args, **kwargs)
        result = ("value", _stable_repr(value, limit))
    except CallTimeout:
        return "timeout", f"timeout: the call did not finish within {job['timeout']:g} s"
    except MemoryError:
        mb = int(job["memory_bytes"]) // 2**20
        result = ("exception", f"MemoryError: the call passed the memory limit of {mb} MB")
    except RecursionError as error:
        result = ("exception", f"RecursionError: {error}")
    except Exception as error:
        result = ("exception", ADDRESS.sub("", _describe(error))[:limit])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return result


def _describe(error: BaseException) -> str:
    try:
        message = str(error)
    except Exception:
        message = ""
    name = type(error).__name__
    return f"{name}: {message}" if message else name


def _stable_repr(value: Any, limit: int) -> str:
    """``repr`` with sets in sorted order, so a result does not change with the hash seed."""
    try:
        text = _repr(value, 0)
    except Exception as error:
        text = f"<repr failed: {_describe(error)}>"
    text = ADDRESS.sub("", text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _repr(value: Any, depth: int) -> str:
    if depth > 50:
        return "..."
    if type(value) in (set, frozenset):
        items = sorted(_repr(v, depth + 1) for v in value)
        if not items:
            return "set()" if type(value) is set else "frozenset()"
        body = "{" + ", ".join(items) + "}"
        return body if type(value) is set else f"frozenset({body})"
    if type(value) is list:
        return "[" + ", ".join(_repr(v, depth + 1) for v in value) + "]"
    if type(value) is tuple:
        inner = ", ".join(_repr(v, depth + 1) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if type(value) is dict:
        pairs = (f"{_repr(k, depth + 1)}: {_repr(v, depth + 1)}" for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    return repr(value)


if __name__ == "__main__":
    main()
