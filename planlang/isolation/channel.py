"""Requests both ways over one pipe pair, many in flight, each served on the right thread.

Either side may ask the other (the plan's process asks for host calls, the host asks for plan
functions to be called back) and many requests are in flight at once: 16 thunks calling
``agent`` together overlap in the host. A request names the request of the other side that its
thread is serving (its context); the other side hands it to the thread waiting on that request,
which serves it before going back to waiting. So a call made from inside a callback runs on the
very thread that made the callback, as it would in one process (the runtime's workers know
themselves by thread), and nesting cannot deadlock: no thread waits idle while work for it
queues. A request without a waiting thread goes to a small pool.

There is no reader thread: one of the waiting threads reads the pipe for all (the leader) and
hands each frame to its thread; when the leader has its own answer it wakes another waiter to
take over. A plan calling host words one after another thus crosses no thread at all: its
thread writes the request and reads the answer, and on the host the thread waiting for the
run reads the request and serves it itself.

Messages: ``["q", id, context, op, payload]``, ``["a", id, ok, payload]`` and
``["n", context, op, payload]`` (a notice: no answer, kept in order with its context).
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import IO, Any

from planlang.isolation.codec import CodecError, read_frame, write_frame

__all__ = ["ChannelClosed", "Endpoint"]

# (op, payload) -> (ok, payload); the payload of a failure describes the error.
Serve = Callable[[str, Any], tuple[bool, Any]]
Notice = Callable[[str, Any], None]


class ChannelClosed(Exception):
    """The other side is gone (it died, was killed, or the session ended)."""


_DEAD = ("dead",)
_LEAD = ("lead",)  # to a waiter: nobody reads the pipe now; read it


class Endpoint:
    """One side of the channel. ``default_context`` is the context of threads that serve
    nothing (in the plan's process: the run itself)."""

    def __init__(
        self,
        reader: IO[bytes],
        writer: IO[bytes],
        serve: Serve,
        notice: Notice,
        *,
        frame_limit: int,
        default_context: int | None = None,
        workers: int = 32,
        on_close: Callable[[str], None] | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._serve = serve
        self._notice = notice
        self._frame_limit = frame_limit
        self.default_context = default_context
        self._waiters: dict[int, queue.SimpleQueue[Any]] = {}
        self._reading = False  # a waiter is reading the pipe for everyone
        self._idle: list[queue.SimpleQueue[Any]] = []  # waiters blocked on their inbox
        self._mutex = threading.Lock()
        self._ids = itertools.count(1)
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._workers = workers
        self._on_close = on_close
        self.closed: str | None = None

    # -- sending -------------------------------------------------------------------------

    def send(self, message: Any) -> None:
        if self.closed is not None:
            raise ChannelClosed(self.closed)
        try:
            with self._write_lock:
                write_frame(self._writer, message)
        except (OSError, ValueError) as error:
            self.close(f"the pipe broke: {error}")
            raise ChannelClosed(self.closed) from None

    def context(self) -> int | None:
        return getattr(self._local, "serving", None) or self.default_context

    def notify(self, op: str, payload: Any) -> None:
        self.send(["n", self.context(), op, payload])

    def request(self, op: str, payload: Any) -> tuple[bool, Any]:
        """Ask the other side; serve what it asks of this thread meanwhile."""
        rid = next(self._ids)
        inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._waiters[rid] = inbox
        try:
            self.send(["q", rid, self.context(), op, payload])
            while True:
                message = self._next(inbox)
                kind = message[0]
                if kind == "a":
                    return bool(message[2]), message[3]
                if kind == "dead":
                    raise ChannelClosed(self.closed or "closed")
                self._handle(message)
        finally:
            self._waiters.pop(rid, None)
            self._pass_lead()

    # -- receiving -----------------------------------------------------------------------

    def _next(self, inbox: queue.SimpleQueue[Any]) -> Any:
        """This waiter's next message: read the pipe if nobody else does, else wait. A thread
        that stops reading to do anything else first wakes an idle waiter to read instead."""
        while True:
            try:
                message = inbox.get_nowait()
            except queue.Empty:
                pass
            else:
                if message is not _LEAD:
                    self._pass_lead()
                    return message
            with self._mutex:
                lead = not self._reading and self.closed is None
                if lead:
                    self._reading = True
                else:
                    self._idle.append(inbox)
            if not lead:
                message = inbox.get()
                with self._mutex:
                    if inbox in self._idle:
                        self._idle.remove(inbox)
                if message is _LEAD:
                    continue
                self._pass_lead()
                return message
            try:
                frame = self._read_one()
            finally:
                with self._mutex:
                    self._reading = False
            if frame is not None:
                self._route_safely(frame)

    def _read_one(self) -> Any:
        try:
            frame = read_frame(self._reader, self._frame_limit)
            if frame is None:
                self.close("the other side closed the pipe")
            return frame
        except (OSError, ValueError, CodecError, IndexError, TypeError) as error:
            self.close(f"a frame could not be read: {error}")
            return None

    def _pass_lead(self) -> None:
        """If nobody reads the pipe now, wake an idle waiter to read it."""
        with self._mutex:
            if self._reading or not self._idle:
                return
            inbox = self._idle.pop()
        inbox.put(_LEAD)

    def _route_safely(self, message: Any) -> None:
        try:
            self._route(message)
        except (CodecError, IndexError, TypeError, ValueError) as error:
            self.close(f"a frame was not a message: {error}")

    def _route(self, message: Any) -> None:
        if type(message) is not list or not message:
            raise CodecError("A frame was not a message.")
        kind = message[0]
        if kind == "a":
            inbox = self._waiters.get(message[1])
            if inbox is not None:
                inbox.put(message)
            return  # an answer nobody waits for any more (its waiter gave up): dropped
        if kind not in ("q", "n"):
            raise CodecError(f"Unknown message kind {kind!r}.")
        context = message[2] if kind == "q" else message[1]
        inbox = self._waiters.get(context) if context is not None else None
        if inbox is not None:
            inbox.put(message)
        else:
            self._spare().submit(self._handle, message)

    def _spare(self) -> ThreadPoolExecutor:
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
        previous = getattr(local, "serving", None)
        local.serving = rid
        try:
            ok, answer = self._serve(op, payload)
        finally:
            local.serving = previous
        try:
            self.send(["a", rid, ok, answer])
        except ChannelClosed:
            pass  # the other side is gone: the answer is discarded

    # -- closing -------------------------------------------------------------------------

    def close(self, reason: str) -> None:
        """Wake every waiter with ChannelClosed; later sends fail."""
        if self.closed is None:
            self.closed = reason
        for inbox in list(self._waiters.values()):
            inbox.put(_DEAD)
        if self._on_close is not None:
            callback, self._on_close = self._on_close, None
            callback(reason)
        with self._pool_lock:
            pool = self._pool
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
