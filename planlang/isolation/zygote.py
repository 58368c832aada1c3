"""The fork server: one warm, pre-imported process that forks a fresh plan process per run.

Starting an interpreter and importing the sandbox costs a few hundred milliseconds of CPU; a
fork of a process that has done it costs about a millisecond, and the fork starts from the
server's pristine state, so nothing of one plan can reach the next (each fork runs one plan and
exits; the server itself never runs plan code). The server enters the user and network
namespaces once (forks inherit them); each fork then confines itself in its own scratch
directory (landlock, seccomp, the audit hook: ``confine.enter``) before it says it is ready.

The server stays single-threaded (fork is only safe so). It takes requests on a Unix socket:
a scratch directory and the pipe ends of the new child (its channel's and its lanes', passed
as file descriptors), and
answers with the child's pid; when a child exits it reports the status, since only the server
can wait for its children. It is also the subreaper of whatever a child forks (where the
child's seccomp failed): as a child ends, each such orphan is killed.
"""

from __future__ import annotations

import _signal
import _thread
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

from planlang.isolation import heap_warming, orphans, warming
from planlang.isolation.lanes import LANES
from planlang.sandbox import limits
from planlang.sandbox.deep_stack import MAX_STACK, STACK_MARGIN

__all__ = ["Zygote", "serve"]

_BOOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "boot.py")  # -S: see there
# The stack the main thread of the server, and so of every fork, may grow to (boot.py raises
# RLIMIT_STACK to it): the deepest any plan needs, and room for the frames beneath the plan.
# Only reserved (untouched pages cost nothing), and counted in each plan's address space.
MAIN_STACK = MAX_STACK + STACK_MARGIN
# Not secrets: glibc's arenas, kept inside RLIMIT_AS; and one string hash for every plan, so a
# set of texts iterates in the same order in every run (a rerun asks the ledger the same
# questions in the same order, a replay gives the same result)
_ENV = {"MALLOC_ARENA_MAX": "2", "PYTHONHASHSEED": "0"}
_WARM_TURNS = 12  # runs of a fork's warm-up here: CPython 3.11 specializes after 8 or so
# A fork request: the child's scratch directory (its path, as bytes) and the child's ends of
# its pipes (a pair for its channel, and one for each lane).
_MAX_REQUEST = 8192
_FDS = 2 * (1 + LANES)
_FD_BYTES = struct.calcsize("i")


def serve(config: dict[str, Any]) -> None:
    """The server's main loop (in its own process)."""
    from planlang.isolation import child, confine  # imported once, inherited by every fork

    _warm_up()
    control = socket.socket(fileno=int(config["control"]))
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    without = child.config_without(config)
    confine.prepare()  # once here, not in every fork
    warming.allow_way_back()
    namespaces = (
        [confine.Layer("network namespace", False, "left out (tests only)")]
        if "network namespace" in without
        else confine._namespaces()
    )
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    orphans.adopt()
    control.sendall(json.dumps({"ready": [layer.as_list() for layer in namespaces]}).encode())
    _serve_forks(config, control, wake_r, wake_w, namespaces, without)


def _serve_forks(config: dict[str, Any], control: socket.socket, wake_r: int, wake_w: int,
                 namespaces: Any, without: tuple[str, ...]) -> None:  # fmt: skip
    """Fork a child per request, report each exit. Each fork makes every page of this process
    copy-on-write again, and each page the server then writes is copied (about 5 µs here,
    130 pages a fork before): so between forks it writes as little as it can, with one
    system call per step, bytes for messages (no JSON) and the same objects every turn."""
    poll = select.poll()
    poll.register(control, select.POLLIN)
    poll.register(wake_r, select.POLLIN)
    recvmsg, send = control.recvmsg, control.send
    forked: set[int] = set()  # the plan processes alive (any other child is an orphan)
    fork = _quiet_fork()
    fds_space = socket.CMSG_SPACE(_FDS * _FD_BYTES)
    while True:
        for fd, _event in poll.poll():
            if fd == wake_r:
                os.read(wake_r, 512)
                _reap(send, forked)
                continue
            data, ancillary, _flags, _address = recvmsg(_MAX_REQUEST, fds_space)
            if not data:
                os._exit(0)  # the host is gone: so are we
            fds = [n for _level, _kind, cdata in ancillary for n in _fd_numbers(cdata)]
            if len(fds) != _FDS:  # not a request of ours: close what came, fork nothing
                for extra in fds:
                    os.close(extra)
                send(b"p-1")
                continue
            pid = fork()
            if pid == 0:
                _after_fork()
                _signal.set_wakeup_fd(-1)  # not signal's wrappers: see confine.enter
                _signal.signal(signal.SIGCHLD, _signal.SIG_DFL)
                control.close()
                os.close(wake_r)
                os.close(wake_w)
                _child(config, os.fsdecode(data), fds, namespaces, without)
            forked.add(pid)
            for fd in fds:
                os.close(fd)
            _answer_fork(control, pid)


def _quiet_fork() -> Callable[[], int]:
    """libc's fork, called with the GIL held (os.fork where ctypes cannot reach it).

    os.fork runs Python's at-fork machinery: before, the hooks of logging and
    concurrent.futures in this server; after, in the child, the interpreter's locks, GIL and
    thread states made again and the hooks of threading and random. All of it writes to
    pages of the server's memory, which the child then copies (about 60 pages a child, 6 µs
    each here). This server is single-threaded and holds no lock when it forks, so there is
    nothing to mend: the child goes on as the server was, random's state included (neither a
    plan nor the code of a plan's process draws from it). What planlang itself must forget in
    a fork is forgotten by ``_after_fork``."""
    import ctypes

    try:
        libc = ctypes.PyDLL(None, use_errno=True)
        raw = libc.fork
    except (OSError, AttributeError):
        return os.fork
    raw.restype, raw.argtypes = ctypes.c_int, []

    def fork() -> int:
        if _thread._count():  # a thread started here after all: os.fork mends what it can
            return os.fork()
        pid = int(raw())
        if pid < 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        return pid

    return fork


def _after_fork() -> None:
    """planlang's own at-fork hooks (``_quiet_fork`` runs none): the memory meter's open
    /proc/self/statm is the server's."""
    limits._forget_statm()


def _answer_fork(control: socket.socket, pid: int) -> None:
    """Tell the host the pid, with a pidfd of the process: the host kills through it, so its
    kill can never reach another process given the number once this server has reaped it (a
    report of the exit comes after the reaping). Opened before this server can reap it."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:  # a kernel without pidfds: the host kills by number
        control.send(b"p%d" % pid)
        return
    try:
        socket.send_fds(control, [b"p%d" % pid], [pidfd])
    finally:
        os.close(pidfd)


def _warm_up() -> None:
    """Run a small plan here once, so every fork starts with the sandbox's caches filled and
    its lazy imports done (the plans themselves never run in this process)."""
    from planlang.check import check
    from planlang.sandbox import deep_stack as stack
    from planlang.sandbox.inprocess import Sandbox
    from planlang.sandbox.limits import Limits

    source = (
        "def f(x):\n    return {'n': x, 'text': f'{x}'}\n"
        "rows = [f(i) for i in range(50)]\nr = word('a', b=1)\nprint(len(rows))\n"
        "result = sorted(rows, key=lambda row: -row['n'])[:3]\n"
    )
    box = Sandbox(host={"word": lambda a, b=0: {"a": a, "b": b}}, limits=Limits(seconds=30),
                  log=lambda line: None, isolation="inprocess")  # fmt: skip
    checked = check(source, "warm-up.py")
    assert checked.code is not None
    stack._decisions[checked.code] = False  # inline: the server must stay single-threaded
    box.run(checked)
    from planlang.isolation import child

    # a fork runs the first (what every run touches) before ready, the rest while it waits
    plans = [check(text, "warm-up.py") for text in (
        "r = word('a', b=1)\nresult = [r, {'n': 1}]\n", *warming.WARM_PLANS)]  # fmt: skip
    for plan in plans:
        assert plan.code is not None, plan.problems
        stack._decisions[plan.code] = False
    child.warm_up_with(plans)
    # CPython specializes a function's bytecode in place once it has run a few times: done
    # here, the forks find the code they run specialized already, and copy fewer of its
    # pages (each fork would write its counters and caches)
    for _ in range(_WARM_TURNS):
        for sent in child._WARM_RUNS:
            child.warm_run(sent)
    # What the sandbox imports only when it first needs it: a fork may read no code later
    # (landlock lets it read only what was loaded before it was confined).
    import resource  # noqa: F401 - the meter's fallback

    import runtime.stacks  # noqa: F401 - the deep stack's lock

    assert threading.active_count() == 1, "the fork server must not start threads"
    import gc

    gc.collect()
    gc.freeze()  # the collector leaves what the forks share alone: fewer copied pages
    heap_warming.learn()  # where the interpreter's writable pages are, for the forks


def _child(config: dict[str, Any], scratch: str, fds: list[int], namespaces: Any,
           without: tuple[str, ...]) -> None:  # fmt: skip
    from planlang.isolation import child, confine

    try:
        os.chdir(scratch)
        layers = confine.enter(scratch, without, namespaces=namespaces)
        child.serve_one(
            config, fds[0], fds[1], layers, list(zip(fds[2::2], fds[3::2], strict=True))
        )
    finally:
        os._exit(3)


def _fd_numbers(cdata: bytes) -> list[int]:
    """The descriptors of one SCM_RIGHTS message (whole ones only)."""
    whole = len(cdata) - len(cdata) % _FD_BYTES
    return list(memoryview(cdata[:whole]).cast("i"))


def _reap(send: Callable[[bytes], int], forked: set[int]) -> None:
    """Report each plan process that ended; then end the orphans it left (``orphans``)."""
    ended = False
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        ended = True  # a plan process, or an orphan (whose own children are ours now)
        if pid in forked:
            forked.discard(pid)
            send(b"x%d %d" % (pid, os.waitstatus_to_exitcode(status)))
    if ended:
        orphans.end(forked)


class Zygote:
    """The host's handle on one fork server."""

    def __init__(self, *, probes: bool = False, without: tuple[str, ...] = ()):
        host_end, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        config = {"path": [p for p in sys.path if p], "probes": probes,
                  "without": list(without), "control": server_end.fileno(),
                  "stack": MAIN_STACK}  # fmt: skip
        self.process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-s", "-P", "-S", _BOOT, json.dumps(config)],  # -I less -E: _ENV only
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=dict(_ENV), close_fds=True, pass_fds=(server_end.fileno(),), cwd="/",
            start_new_session=True,
        )  # fmt: skip
        server_end.close()
        self._control = host_end
        self._closed = False
        self._lock = threading.Lock()
        self._pids: list[tuple[int, int | None]] = []  # forked, each with its pidfd if any
        self._pid_ready = threading.Condition(threading.Lock())
        self._exits: dict[int, int] = {}  # by pid: one the kernel gives again is forgotten
        self._exited = threading.Condition(threading.Lock())
        self._watchers: dict[int, Callable[[], None]] = {}
        self.answer_wait = 30.0  # seconds a fork waits for the server's answer
        first = json.loads(host_end.recv(65536) or b"{}")
        if "ready" not in first:
            self.close()
            raise RuntimeError("The plan fork server did not start (see `planlang doctor`).")
        self.namespaces = first["ready"]
        threading.Thread(target=self._listen, name="planlang-zygote", daemon=True).start()

    def alive(self) -> bool:
        return not self._closed and self.process.poll() is None

    def _listen(self) -> None:
        while True:
            try:
                data, fds, _flags, _address = socket.recv_fds(self._control, 65536, 1)
            except OSError:
                data, fds = b"", []
            if not data:
                with self._pid_ready:
                    self._pids.append((-1, None))
                    self._pid_ready.notify_all()
                return
            if data[:1] == b"p":  # the pid of the child just forked (-1: none), its pidfd
                self._exits.pop(int(data[1:]), None)  # an earlier child's, of a reused pid
                with self._pid_ready:
                    self._pids.append((int(data[1:]), fds[0] if fds else None))
                    self._pid_ready.notify_all()
                continue
            for fd in fds:  # nothing else comes with a descriptor
                os.close(fd)
            if data[:1] == b"x":  # a child's exit: its pid and exit code
                pid, code = map(int, data[1:].split())
                with self._exited:
                    self._exits[pid] = code
                    self._exited.notify_all()
                    watcher = self._watchers.pop(pid, None)
                if watcher is not None:
                    watcher()

    def fork(self, scratch: str) -> tuple[int, int | None, int, int, list[tuple[int, int]]]:
        """A new child: (pid, its pidfd or None, pipe to read its frames from, pipe to write
        frames to, and the same pair for each of its ``LANES`` lanes)."""
        made: list[int] = []
        try:
            for _ in range(2 * (1 + LANES)):
                made.extend(os.pipe())
        except OSError:  # out of descriptors: none of those made is left open
            for fd in made:
                os.close(fd)
            raise
        pairs = [tuple(made[i : i + 4]) for i in range(0, len(made), 4)]  # to r, w; from r, w
        theirs = [fd for to_r, _, _, from_w in pairs for fd in (to_r, from_w)]
        ours = [(from_r, to_w) for _, to_w, from_r, _ in pairs]
        pid, pidfd = -2, None  # none yet: ours are closed unless a child takes them
        stuck = False
        try:
            with self._lock:
                body = os.fsencode(scratch)
                if self._sent(body, theirs):
                    with self._pid_ready:
                        while not self._pids and not stuck:
                            stuck = not self._pid_ready.wait(timeout=self.answer_wait)
                        if not stuck:
                            pid, pidfd = self._pids.pop(0)
        finally:
            for fd in theirs:
                os.close(fd)
            if pid < 0:
                for pair in ours:
                    os.close(pair[0])
                    os.close(pair[1])
        if stuck:  # its late answer would be taken for the next fork's: this server is done
            self.close()
            raise RuntimeError("The plan fork server stopped answering.")
        if pid < 0:  # ended, or could not take the request (say, its open files): replaced
            self.close()
            raise RuntimeError("The plan fork server has ended.")
        (reader, writer), *lanes = ours
        return pid, pidfd, reader, writer, lanes

    def _sent(self, body: bytes, fds: list[int]) -> bool:
        """Send a fork request; False if it could not go: this handle was closed meanwhile
        (another thread's fork met the server ended), or the server is gone."""
        try:
            socket.send_fds(self._control, [body], fds)
        except OSError:
            return False
        return True

    def watch(self, pid: int, exited: Callable[[], None]) -> None:
        """Call ``exited`` (on this handle's listening thread, or now) once ``pid`` has ended:
        a run whose host word blocks hears that its plan's process died."""
        with self._exited:
            if pid not in self._exits:
                self._watchers[pid] = exited
                return
        exited()

    def exit_code(self, pid: int, timeout: float = 0.0) -> int | None:
        """The child's exit code (negative: the signal that ended it), if it has ended."""
        with self._exited:
            if pid not in self._exits and timeout > 0:
                self._exited.wait_for(lambda: pid in self._exits, timeout=timeout)
            return self._exits.get(pid)

    def close(self) -> None:
        self._closed = True  # first: a pool asking now starts a fresh server
        with self._pid_ready:  # answers no fork took: a stuck server's late one
            for _pid, pidfd in self._pids:
                if pidfd is not None:
                    os.close(pidfd)
            self._pids.clear()
        try:
            self._control.close()
        finally:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait(timeout=10)
