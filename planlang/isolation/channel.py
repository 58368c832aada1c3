"""Requests both ways over one pipe pair, many in flight, each served on the right thread.

Either side may ask the other (the plan's process asks for host calls, the host asks for plan
functions to be called back) and many requests are in flight at once: 16 thunks calling
``agent`` together overlap in the host. A request names the request of the other side that its
thread is serving (its context); the other side hands it to the thread waiting on that request,
which serves it before going back to waiting. So a call made from inside a callback runs on the
very thread that made the callback, as it would in one process (the runtime's workers know
themselves by thread), and nesting cannot deadlock: no thread waits idle while work for it
queues. A request without a waiting thread goes to a pool: by default a small
``ThreadPoolExecutor``; the plan's process gives one that starts a thread for each such
request in flight, up to a bound (``callback_threads.CallbackThreads``). A notice without a
waiting thread (the host's word that a lane is in use, ``lanes``) is taken by the thread that
reads it.

There is no reader thread: one of the waiting threads reads the pipe for all (the leader) and
hands each frame to its thread; when the leader has its own answer it wakes another waiter to
take over. A plan calling host words one after another thus crosses no thread at all: its
thread writes the request and reads the answer, and on the host the thread waiting for the
run reads the request and serves it itself. The leader keeps its own frames (its answer, or a
request it must serve) rather than passing them through its inbox.

Messages: ``["q", id, context, op, payload]``, ``["a", id, ok, payload]``, ``["p", id, payload]``
(an answer that is plain JSON as it stands: no tags to decode, see ``plain.plain_answer``) and
``["n", context, op, payload]`` (a notice: no answer, kept in order with its context).
"""

from __future__ import annotations

import functools
import itertools
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from time import monotonic
from typing import Any, Protocol

from planlang.isolation.codec import CodecError
from planlang.isolation.frames import FrameReader, write_all
from planlang.isolation.queued import Queued

__all__ = ["ChannelClosed", "ChannelTimeout", "Endpoint", "MAX_PENDING", "PLAIN", "SHAPES",
           "waiting"]  # fmt: skip

# (op, payload) -> (ok, payload); the payload of a failure describes the error. ``ok`` may be
# PLAIN: the payload is plain JSON that decodes as itself, sent as ["p", id, payload].
Serve = Callable[[str, Any], tuple[Any, Any]]
PLAIN = "plain"  # an ``ok`` that is true: the answer needs no decoding
Notice = Callable[[str, Any], None]


class Spare(Protocol):
    """Runs the requests no waiting thread claims (``ThreadPoolExecutor`` is one)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Any: ...

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None: ...


class ChannelClosed(Exception):
    """The other side is gone (it died, was killed, or the session ended)."""


class ChannelTimeout(Exception):
    """A request's ``until`` passed before its answer came."""


MAX_PENDING = 4096  # requests no thread waits for, queued at once (a fan-out has its width)

# Threads of this process waiting on any channel now, one entry each (several runs at once:
# none polls). append and pop of a list are atomic: no lock on the hot path.
waiting: list[None] = []
SHAPES = {"q": 5, "a": 4, "p": 3, "n": 4}  # ["q", id, context, op, payload], ["p", id, x], ...
_DEAD = ("dead",)
_TIMEOUT = ("timeout",)
_LEAD = ("lead",)  # to a waiter: nobody reads the pipe now; read it


class _Serving(threading.local):
    """Per thread: the request of the other side it serves now (None: none). A class default,
    so reading it where it was never set raises nothing (an AttributeError costs 2 µs)."""

    serving: int | None = None


class Endpoint:
    """One side of the channel. ``default_context`` is the context of threads that serve
    nothing (in the plan's process: the run itself)."""

    def __init__(
        self,
        reader: FrameReader,
        writer: int,
        serve: Serve,
        notice: Notice,
        *,
        default_context: int | None = None,
        workers: int = 32,
        spare: Spare | None = None,
        on_close: Callable[[str], None] | None = None,
        write: Callable[[int, Any], None] = write_all,
    ) -> None:
        """``reader`` reads the other side's frames; ``writer``, the pipe to it, takes them
        by ``write``; both are the endpoint's from now on. ``spare`` runs requests no
        waiting thread claims (default: a pool of ``workers`` threads)."""
        self._reader = reader
        self._writer = writer
        self._write = write
        self._serve = serve
        self._notice = notice
        self.default_context = default_context
        self._waiters: dict[int, queue.SimpleQueue[Any]] = {}
        self._reading = False  # a waiter is reading the pipe for everyone
        self._idle: list[queue.SimpleQueue[Any]] = []  # waiters blocked on their inbox
        self._mutex = threading.Lock()
        self._ids = itertools.count(1)
        self._local = _Serving()
        self._write_lock = threading.Lock()
        self._pool: Spare | None = spare
        self._pool_lock = threading.Lock()
        self._workers = workers
        self._on_close = on_close
        self.closed: str | None = None
        self.failure: BaseException | None = None  # what a frame that closed it raised
        self._serving: list[None] = []  # requests of the other side being served now
        self._pending = 0  # requests of the other side waiting for, or in, the spare pool
        self._queued = Queued()  # frames in waiters' inboxes, held to the reader's budget

    # -- sending -------------------------------------------------------------------------

    def send(self, message: Any) -> None:
        try:
            with self._write_lock:
                if self.closed is not None:  # checked under the lock: the pipe is still ours
                    raise ChannelClosed(self.closed)
                self._write(self._writer, message)
        except (OSError, ValueError) as error:
            self.close(f"the pipe broke: {error}")
            raise ChannelClosed(self.closed) from None
        finally:
            if self.closed is not None:
                self._release()

    def context(self) -> int | None:
        return self._local.serving or self.default_context

    def notify(self, op: str, payload: Any) -> None:
        self.send(["n", self.context(), op, payload])

    def request(
        self,
        op: str,
        payload: Any,
        *,
        until: float | None = None,
        hand_off: Callable[[Callable[[], tuple[Any, Any]]], tuple[Any, Any]] | None = None,
    ) -> tuple[Any, Any]:
        """Ask the other side; serve what it asks of this thread meanwhile.

        ``until`` (on ``time.monotonic``) ends the wait with ChannelTimeout. ``hand_off`` is
        called, instead of serving, when the first message for this thread arrives, with the
        function that serves it and waits on: it may run that elsewhere (the host serves a
        plan's calls on a thread of its own) and returns what it gives. So a plan that calls
        nothing costs no thread, and one that does costs one, once. The answer's ``ok`` is
        True, False or PLAIN (true: its payload is plain JSON, needing no decoding)."""
        rid = next(self._ids)
        inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._waiters[rid] = inbox
        handed = False
        try:
            context = self._local.serving or self.default_context
            self.send(["q", rid, context, op, payload])
            while True:
                message = self._next(rid, inbox, until)
                kind = message[0]
                if kind == "p":  # the usual answer to a host call
                    return PLAIN, message[2]
                if kind != "q" and kind != "n":
                    return self._answer(message)
                if hand_off is not None:
                    handed = True
                    return hand_off(functools.partial(self._go_on, rid, inbox, message))
                self._handle(message)
        finally:
            if not handed:
                self._waiters.pop(rid, None)

    def _go_on(self, rid: int, inbox: queue.SimpleQueue[Any], first: Any) -> tuple[Any, Any]:
        """Serve ``first``, then wait for the answer to ``rid``, serving on the way."""
        try:
            self._handle(first)
            while True:
                message = self._next(rid, inbox, None)
                if message[0] not in ("q", "n"):
                    return self._answer(message)
                self._handle(message)
        finally:
            self._waiters.pop(rid, None)

    def _answer(self, message: Any) -> tuple[Any, Any]:
        kind = message[0]
        if kind == "p":
            return PLAIN, message[2]
        if kind == "a":
            return bool(message[2]), message[3]
        if kind == "timeout":
            raise ChannelTimeout("the time ran out")
        raise ChannelClosed(self.closed or "closed")

    # -- receiving -----------------------------------------------------------------------

    def _next(self, rid: int, inbox: queue.SimpleQueue[Any], until: float | None) -> Any:
        """The next message for request ``rid``: from its inbox, or read from the pipe if
        nobody else reads it, or waited for. A thread that stops reading to do anything else
        first wakes an idle waiter to read instead."""
        mutex = self._mutex
        waiting.append(None)
        try:
            while True:
                with mutex:
                    if not inbox.empty():
                        message = inbox.get_nowait()
                        if self.closed is not None and message[0] == "q":
                            continue  # the session is over: a request queued here is dropped
                        lead = False
                    elif self._reading or self.closed is not None:
                        self._idle.append(inbox)
                        message = None
                        lead = False
                    else:
                        self._reading = lead = True
                if lead:
                    message = self._lead(rid, until)
                    if message is None:
                        continue  # the pipe closed: the inbox holds the news
                elif message is None:
                    try:
                        timeout = None if until is None else until - monotonic()
                        message = inbox.get(timeout=timeout)
                    except (queue.Empty, ValueError):
                        message = _TIMEOUT
                    with mutex:
                        if inbox in self._idle:
                            self._idle.remove(inbox)
                if message is _LEAD:
                    continue
                if self._queued.costs:
                    self._queued.take(message)
                if self._idle:  # read unlocked: a waiter that went idle while we read is seen
                    self._pass_lead()
                return message
        finally:
            waiting.pop()

    def _lead(self, rid: int, until: float | None) -> Any:
        """Read frames for everyone until one is for ``rid`` (returned), or the pipe ends, or
        ``until`` passes (``_TIMEOUT``)."""
        read = self._reader.read
        route = self._route
        try:
            while True:
                try:
                    # poll only while this thread is the only one of its process waiting on a
                    # channel, and this channel's other side asks nothing of it
                    frame = read(until, len(waiting) <= 1 and not self._serving)
                except TimeoutError:  # an OSError too: the time ran out, the pipe did not fail
                    return _TIMEOUT
                except (OSError, ValueError, CodecError, IndexError, TypeError) as error:
                    self.failure = error
                    self.close(f"a frame could not be read: {error}")
                    return None
                if frame is None:
                    self.close("the other side closed the pipe")
                    return None
                if self.closed is not None:  # over meanwhile: what was still in the pipe is
                    return None  # dropped, not served (the inbox holds the news)
                try:
                    if route(frame, rid):
                        return frame
                except (CodecError, IndexError, TypeError, ValueError) as error:
                    self.failure = error  # FrameTooCostly: too much queued for its threads
                    self.close(f"a frame was not a message: {error}")
                    return None
        finally:
            with self._mutex:
                self._reading = False
            if self.closed is not None:
                self._release()

    def _pass_lead(self) -> None:
        """If nobody reads the pipe now, wake an idle waiter to read it."""
        with self._mutex:
            if self._reading or not self._idle:
                return
            inbox = self._idle.pop()
        inbox.put(_LEAD)

    def _route(self, message: Any, rid: int) -> bool:
        """Hand a frame to the thread it is for; True if that is the reader itself (``rid``)."""
        if type(message) is not list or not message or SHAPES.get(message[0]) != len(message):
            raise CodecError("A frame was not a message.")
        kind = message[0]
        if kind == "a" or kind == "p":
            if message[1] == rid:
                return True
            inbox = self._waiters.get(message[1])
            if inbox is not None:
                inbox.put(message)
            return False  # an answer nobody waits for any more (its waiter gave up): dropped
        if kind not in ("q", "n"):
            raise CodecError(f"Unknown message kind {kind!r}.")
        context = message[2] if kind == "q" else message[1]
        if context is not None and context == rid:
            return True
        if context is None and kind == "n":  # a notice to this side as a whole: served here
            self._notice(message[2], message[3])
            return False
        inbox = self._waiters.get(context) if context is not None else None
        if inbox is not None:
            # a thread busy serving has a bounded queue too: a child's requests for one thread
            # come one at a time (its notices, what a plan prints, may come faster)
            if kind == "q" and inbox.qsize() >= MAX_PENDING:
                raise CodecError(f"more than {MAX_PENDING:,} requests waited for one thread")
            self._queued.add(message, self._reader.budget)  # held to the reader's budget
            inbox.put(message)
            return False
        with self._mutex:
            if self._pending >= MAX_PENDING:  # only a broken or hostile side sends so many
                raise CodecError(f"more than {MAX_PENDING:,} requests waited to be served")
            self._pending += 1
        self._spare().submit(self._handle_spare, message)
        return False

    def _handle_spare(self, message: Any) -> None:
        try:
            self._handle(message)
        finally:
            with self._mutex:
                self._pending -= 1

    def _spare(self) -> Spare:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="planlang-serve")
            return self._pool

    def _handle(self, message: Any) -> None:
        if message[0] == "n":
            self._notice(message[2], message[3])
            return
        _, rid, _context, op, payload = message
        local = self._local
        previous = local.serving
        local.serving = rid
        serving = self._serving
        serving.append(None)  # atomic, as is the pop: no lock
        try:
            ok, answer = self._serve(op, payload)
        finally:
            local.serving = previous
            serving.pop()
        try:
            self.send(["p", rid, answer] if ok is PLAIN else ["a", rid, ok, answer])
        except ChannelClosed:
            pass  # the other side is gone: the answer is discarded

    # -- closing -------------------------------------------------------------------------

    def _release(self) -> None:
        """Close the pipes this endpoint owns, each once no thread uses it (closed only)."""
        with self._mutex:
            if not self._reading:
                self._reader.close()
        if self._write_lock.acquire(blocking=False):
            try:
                if self._writer >= 0:
                    fd, self._writer = self._writer, -1
                    os.close(fd)
            finally:
                self._write_lock.release()

    def close(self, reason: str) -> None:
        """Wake every waiter with ChannelClosed; later sends fail; the pipes are closed once
        no thread reads or writes them (a descriptor closed under a thread still in a system
        call on it could be reused at once for another plan's pipe)."""
        if self.closed is None:
            self.closed = reason
        for inbox in list(self._waiters.values()):
            inbox.put(_DEAD)
        self._release()
        if self._on_close is not None:
            callback, self._on_close = self._on_close, None
            callback(reason)
        with self._pool_lock:
            pool = self._pool
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
