"""Lanes: a pipe pair each, for the host's threads that call plan functions back.

An embedder's fan-out word (or the runtime's ``parallel``) calls a plan's thunks on many host
threads at once, and each thunk calls host words in turn. Over the one channel of a run, every
frame of that traffic is read by whichever thread reads the pipe and handed to the thread it
is for: two hand-offs per frame on each side, which on this machine cost more than the rest of
a callback. So each plan process is forked with ``LANES`` spare pipe pairs. A host thread that
calls a plan function back while serving nothing takes a free lane for the call; the first
time a lane is used the host says so on the run's channel, and the plan's process starts one
thread for it (``Peer.open_lane``), which runs every callback sent on that lane and makes the
host calls of each on the same lane. So one thread of each side talks to one of the other: the
frames for each are read by that thread itself, and nothing is handed on. A thread that already
serves a request (a host word calling back a plan function it was given, inside a callback)
goes on on the channel or lane of that request, as before; with every lane taken, a callback
goes over the run's channel as before.

A callback whose last act is a host call (``lambda: agent(...)``, the usual thunk) is two
frames, not four: the plan's process asks for that call as a ``tail`` (``peer.Peer.call_op``
says when it is one) and unwinds the callback's frames at once, nothing of them being left
to run (``peer.TailSent``): what the plan made in it is freed while the host works. The host,
when the answer would cross as itself (plain JSON, or a scalar), takes it as the callback's
result, copied as a crossing copies it, and sends nothing; its next request on the lane, a
callback of its own, says so (``TAKEN``: the plan's side sends no answer). Any other answer
(an error, a value that needs the codec, one too large to take as it is) is sent as a call's,
and the plan's process does with it what the callback would have done: its host word's
wrapper's last lines, and its result or error as it crosses (an error names the line of the
call). The host runs only its own word, as for a call, and hands its own caller only a copy
of what that word returned.

What the plan's side does after the word returns includes the wrapper's check: a limit that
tripped meanwhile fails the callback. A trip in the plan's process reaches the host first as
a limit in the answer of a callback (a plan cannot catch a limit, and the wrapper of every
host call raises it before asking), or as the run's end. So the host takes a tail only while
it has heard of no limit from that run, the run goes on, and its deadline has not passed
(``_Session.takes_tail``); else the answer goes back, and the plan's process decides, as
without tails.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from planlang.errors import PlanLimitError
from planlang.isolation.channel import (
    PLAIN,
    SHAPES,
    ChannelClosed,
    ChannelTimeout,
    Endpoint,
    waiting,
)
from planlang.isolation.codec import EMPTY_KWARGS, CodecError, encode_arguments
from planlang.isolation.frames import HELD_MIN, FrameReader, FrameTooCostly, plain_copy
from planlang.isolation.plain import flat
from planlang.isolation.wire import raised

if TYPE_CHECKING:
    from planlang.isolation.parent import _Session

__all__ = ["LANES", "LANE_EXIT", "TAIL", "TAKEN", "Callback", "Lane", "Lanes"]

LANES = 8  # per plan process: a fan-out of that width crosses no thread on either side
LANE_EXIT = 4  # how a plan process exits when it cannot start a lane's thread (its memory)
TAIL = "tail"  # the op of a host call whose answer is the callback's (a "call" otherwise)
# A callback's ``ok`` when a tail's answer is its value: on the host, with that value (a copy);
# in the plan's process, with the host's next request on the lane, which said so
TAKEN = "taken"


class Lane(Endpoint):
    """An endpoint that one thread of each side uses at a time: that thread reads every
    frame itself (each is for it), so nothing is routed, queued or handed on.

    ``takes_tail`` (the host's) says whether a tail's plain answer may be taken now."""

    def __init__(self, *args: Any, takes_tail: Callable[[], bool] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._takes_tail = takes_tail

    def request(
        self,
        op: str,
        payload: Any,
        *,
        until: float | None = None,
        hand_off: Callable[[Callable[[], tuple[Any, Any]]], tuple[Any, Any]] | None = None,
    ) -> tuple[Any, Any]:
        """Ask the other side; serve what it asks meanwhile (requests within this one)."""
        rid = next(self._ids)
        self.send(["q", rid, self._local.serving, op, payload])
        waiting.append(None)
        try:
            return self._wait(rid, op, until)
        finally:
            waiting.pop()

    def ask_tail(self, payload: Any) -> int:
        """In the plan's process: ask for a host call as a tail; its number, for
        ``tail_answer``."""
        rid = next(self._ids)
        self.send(["q", rid, self._local.serving, TAIL, payload])
        return rid

    def tail_answer(self, rid: int) -> tuple[Any, Any]:
        """The answer to tail ``rid``, if the host sends one (serving what it asks within it
        meanwhile); (TAKEN, the host's next callback) if it took the answer. Waits as
        idle as a lane's loop, not counted among the waiters: its answer may never come."""
        return self._wait(rid, TAIL, None)

    def _wait(self, rid: int, op: str, until: float | None) -> tuple[Any, Any]:
        tail = op == TAIL
        while True:
            frame = self._read(until, not tail and len(waiting) <= 1)
            kind = frame[0]
            if kind == "p":
                if frame[1] == rid:
                    return PLAIN, frame[2]
            elif kind == "a":
                if frame[1] == rid:
                    return bool(frame[2]), frame[3]
            elif kind == "q":
                if frame[2] == rid:  # asked of this thread within its own request
                    if frame[3] == TAIL and op == "callback":
                        taken = self._tail(frame[1], frame[4])
                        if taken is not None:
                            return taken
                    else:
                        self._handle(frame)
                    continue
                if tail and frame[2] is None:  # the host's next callback: it took ours
                    return TAKEN, frame
            elif kind == "n" and (frame[1] is None or frame[1] == rid):
                self._notice(frame[2], frame[3])
                continue
            if kind == "q" or kind == "n":
                self.close("a frame was not a message for this lane's thread")
                raise ChannelClosed(self.closed)

    def _tail(self, qid: int, payload: Any) -> tuple[Any, Any] | None:
        """The host's side of a tail call: served as a call. While tails may be taken, an
        answer that would cross as itself is the callback's (a copy, as the crossing makes
        one, within what a frame may hold as it is), nothing is sent, and (TAKEN, the value)
        returned. Any other is sent as a call's, and None returned."""
        ok, answer = self._served(qid, "call", payload)
        takes = self._takes_tail
        if takes is not None and takes():  # after the word: as its wrapper's check
            reader = self._reader
            try:
                if ok is PLAIN:
                    copied = plain_copy(answer, reader.cheap, reader.held, reader.budget)
                    taken = copied is not None
                    if taken:
                        answer = copied
                else:
                    taken = ok is True and flat(answer)
                    if taken and type(answer) is str and len(answer) > HELD_MIN and reader.held:
                        # the word's own str, often a copy a request's decoding made
                        # (``same(big)``): counted as a copied answer is (REDTEAM11)
                        reader.held.keep(answer, sys.getsizeof(answer), reader.budget)
            except FrameTooCostly as error:  # past the run's budget: it ends as a frame would
                self.failure = error  # that the reader refused (its memory limit), never as
                self.close(f"a frame was not allowed: {error}")  # the word's TypeError
                raise ChannelClosed(self.closed) from None
            if taken:
                return TAKEN, answer
        self._reply(qid, ok, answer)
        return None

    def _served(self, rid: int, op: str, payload: Any) -> tuple[Any, Any]:
        """Serve the other side's request ``rid`` on this thread, as ``_handle`` does, and
        give its answer back unsent."""
        local = self._local
        previous = local.serving
        local.serving = rid
        serving = self._serving
        serving.append(None)
        try:
            return self._serve(op, payload)
        finally:
            local.serving = previous
            serving.pop()

    def _reply(self, rid: int, ok: Any, answer: Any) -> None:
        try:
            self.send(["p", rid, answer] if ok is PLAIN else ["a", rid, ok, answer])
        except ChannelClosed:
            pass  # the other side is gone: the answer is discarded

    def outermost(self) -> bool:
        """Whether this lane's thread serves one request now (a callback, not one within)."""
        return len(self._serving) == 1

    def serve_forever(self) -> None:
        """Serve every request the other side sends, on this thread, until the lane closes
        (the plan's process runs one such thread a lane)."""
        frame = None
        while self.closed is None:
            if frame is None:
                try:
                    frame = self._read(None, False)  # idle until the next callback: no polling
                except ChannelClosed:
                    return
            kind = frame[0]
            if kind == "n":
                self._notice(frame[2], frame[3])
            elif kind != "q":
                self.close("a frame was not a request")
                return
            else:
                ok, answer = self._served(frame[1], frame[3], frame[4])
                if ok is TAKEN:  # the host took its tail's answer: nothing to send, and
                    frame = answer  # its next callback read where that answer was waited for
                    continue
                self._reply(frame[1], ok, answer)
            frame = None

    def _read(self, until: float | None, spin: bool) -> Any:
        """The next frame, checked to be a message; ChannelClosed once the lane is over."""
        with self._mutex:
            if self.closed is not None:
                raise ChannelClosed(self.closed)
            self._reading = True  # the pipe is not closed under a thread reading it
        try:
            frame = self._reader.read(until, spin)
        except TimeoutError:
            raise ChannelTimeout("the time ran out") from None
        except (OSError, ValueError, CodecError) as error:
            self.failure = error
            self.close(f"a frame could not be read: {error}")
            frame = None
        finally:
            with self._mutex:
                self._reading = False
            if self.closed is not None:
                self._release()
        if frame is None:
            self.close("the other side closed the pipe")
        elif self.closed is None:
            kind = frame[0] if type(frame) is list and frame else None
            if type(kind) is str and SHAPES.get(kind) == len(frame):  # a list kind: no hash
                return frame
            self.close("a frame was not a message")
        raise ChannelClosed(self.closed)


class _Held(threading.local):
    """Per host thread: the lane it calls back on now (None: none). A class default, so
    reading it where it was never set raises nothing."""

    lane: Endpoint | None = None


class Lanes:
    """A run's lanes, seen from the host: opened on first use, each held by one host thread
    at a time."""

    def __init__(
        self,
        pairs: list[tuple[int, int]],
        opened: Callable[[int, FrameReader, int], Endpoint],
        announce: Callable[[int], None],
    ):
        """``pairs``: each lane's (read, write) pipe ends, owned from now on; ``opened`` makes
        a lane's endpoint from its number and pipes; ``announce`` tells the plan's process a
        lane is in use (before its first frame)."""
        self._pairs: list[tuple[int, int] | None] = list(pairs)
        self._opened = opened
        self._announce = announce
        self._endpoints: list[Endpoint | None] = [None] * len(pairs)
        self._free = list(range(len(pairs) - 1, -1, -1))  # popped from the end: lane 0 first
        self._lock = threading.Lock()
        self._held = _Held()
        self.closed = False

    def endpoints(self) -> list[Endpoint]:
        return [endpoint for endpoint in self._endpoints if endpoint is not None]

    def held(self) -> Endpoint | None:
        return self._held.lane

    def take(self) -> Endpoint | None:
        """A free lane for this thread (opened if new), or None when every lane is taken."""
        try:
            number = self._free.pop()  # atomic: no lock on the hot path
        except IndexError:
            return None
        lane = self._endpoints[number]
        if lane is None:
            lane = self._open(number)
            if lane is None:
                return None  # the run is over: lanes are closed
        self._held.lane = lane
        return lane

    def give_back(self, lane: Endpoint) -> None:
        self._held.lane = None
        self._free.append(self._endpoints.index(lane))

    def _open(self, number: int) -> Endpoint | None:
        with self._lock:
            pair = self._pairs[number]
            if self.closed or pair is None:
                return None
            self._pairs[number] = None
            endpoint = self._opened(number, FrameReader(pair[0], blocking=True), pair[1])
            self._endpoints[number] = endpoint
        self._announce(number)
        return endpoint

    def close(self, reason: str) -> None:
        """Close every lane (its waiters hear ChannelClosed) and the pipes of those unused."""
        with self._lock:
            self.closed = True
            pairs, self._pairs = self._pairs, [None] * len(self._pairs)
        for pair in pairs:
            if pair is not None:
                os.close(pair[0])
                os.close(pair[1])
        for endpoint in self._endpoints:
            if endpoint is not None:
                endpoint.close(reason)


class Callback:
    """A plan function, held by the host: calling it runs it in the plan's process."""

    __slots__ = ("session", "cid", "__weakref__")

    def __init__(self, session: _Session, cid: int):
        self.session, self.cid = session, cid

    def __repr__(self) -> str:
        return f"<plan function {self.cid}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        session = self.session
        if session.ended is not None:
            raise session.ended
        if args or kwargs:
            payload = [self.cid, *encode_arguments(args, kwargs, session.encode)]
        else:  # a thunk, the usual callback: nothing to encode
            payload = [self.cid, [], EMPTY_KWARGS]
        endpoint = session.endpoint
        lanes = session.lanes
        taken = None
        if endpoint.context() is None:  # this thread serves nothing of the run's channel
            lane = lanes.held()  # inside a callback on a lane: go on on it
            if lane is None:
                lane = taken = lanes.take()
            if lane is not None:
                endpoint = lane
        try:
            ok, answer = endpoint.request("callback", payload)
        except ChannelClosed:
            raise session.ended or PlanLimitError("finished", "The plan has ended.") from None
        finally:
            if taken is not None:
                lanes.give_back(taken)
        if ok is TAKEN:  # its last host call's answer, unless the run ended while that ran
            if session.ended is not None:
                raise session.ended  # as a late answer would find the run over
            return answer
        if ok is PLAIN:  # JSON as parsed, within the frame's bound: plain data, str keys only
            return answer
        if not ok:
            error = _failure(session, answer)
            if isinstance(error, PlanLimitError):  # a limit of the plan's: no more tails
                session.limit_heard = error
            raise error
        try:
            value = session.decode(answer)
        except CodecError as error:  # it names a handle it was never given, say
            raise session.broke(f"a frame was not a callback's result: {error}") from None
        if session._held.kept:  # a large answer, kept: counted from now on as its decoding
            session._held.rekey(answer, value)
        return value


def _failure(session: _Session, answer: Any) -> BaseException:
    """What a callback that failed raises in the host word: the plan's error as data, its
    limit, or the host's own passthrough error; never the host's KeyboardInterrupt, nor an
    error of the host's own code, nor a BaseException (a malformed answer, or a passthrough
    the host never raised, ends the run as a protocol break)."""
    if type(answer) is not list or len(answer) != 5 or type(answer[0]) is not str:
        return session.broke("a frame was not a callback's error")
    if answer[0] == "passthrough":  # only ever the host's own error, raised in a host word
        if session.passthrough_error is not None:
            return session.passthrough_error
        return session.broke("a frame failed a callback with a host error the host never raised")
    if answer[0] == "interrupt":  # a plan's process has no say over the host's interrupts
        return PlanLimitError("interrupted", "The plan was interrupted.")
    return raised(answer)
