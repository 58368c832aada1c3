"""The plan's side of the channel: what it hands the host and what the host hands it.

A plan function handed to a host word gets a number (the host calls it back by it); a host
word, object or iterator arrives as a number too, and becomes a proxy here (``RemoteWord``,
``RemoteObject``, ``RemoteIterator``) that asks the host over the channel. What the host
answers is decoded into new plain data nobody else holds.
"""

from __future__ import annotations

import os
import sys
import threading
import types
from typing import Any

from planlang.errors import a_kind
from planlang.isolation.channel import PLAIN, Endpoint
from planlang.isolation.codec import (
    CodecError,
    Decoder,
    Encoder,
    decode_arguments,
    encode_arguments,
)
from planlang.isolation.frames import FrameReader
from planlang.isolation.lanes import LANE_EXIT, TAIL, TAKEN, Lane
from planlang.isolation.plain import flat, plain_tree
from planlang.isolation.wire import describe, raised
from planlang.sandbox.deep_stack import instructions
from planlang.sandbox.host_words import after_call
from planlang.sandbox.wall import HostProxy, HostWord, ReadOnlyDict, ReadOnlyList

__all__ = ["DROPPED", "Peer", "RemoteIterator", "RemoteObject", "RemoteWord", "TailSent"]

DROPPED = 64  # host iterators the plan dropped, told to the host together (``Peer._free``)


class TailSent(BaseException):  # noqa: N818 - not an error: how a callback's frames unwind
    """Raised where a tail call is asked for (``RemoteWord``), through the callback's frames
    (none has a handler, and none has anything left to run: ``Peer.call_op``) to
    ``Peer.serve``, which waits for the tail's answer with nothing of them held. It carries
    what is left to do: the wrapper's last lines (its globals), and the plan's line."""

    def __init__(self, rid: int, wrapper_globals: dict[str, Any], line: int | None):
        super().__init__()
        self.rid, self.wrapper_globals, self.line = rid, wrapper_globals, line


class _Lane(threading.local):
    """Per thread: the lane it serves (None: it talks on the run's channel)."""

    endpoint: Endpoint | None = None


class Peer:
    """This side's tables and codec: plan functions handed to the host, host handles."""

    def __init__(self) -> None:
        self.endpoint: Endpoint | None = None
        self.lanes: list[tuple[int, int] | None] = []  # each lane's pipes, until opened
        self._lane = _Lane()
        self.functions: dict[int, Any] = {}
        self._ids: dict[int, int] = {}
        self.dropped: list[int] = []  # host iterators the plan let go, not yet told (``free``)
        self.filename: str | None = None
        self._tails: dict[types.CodeType, frozenset[int]] = {}
        # What a host word returns is decoded here into new plain data nobody else holds: the
        # plan may have it as it is (``fresh``), where in one process it would be copied.
        self._handles = {
            "w": lambda p: HostWord(RemoteWord(self, int(p)), fresh=True),
            # a word that takes text (HostWord(text=True): log, phase): its arguments are
            # made into text here, priced as the plan's own str, before any crosses
            "wt": lambda p: HostWord(RemoteWord(self, int(p)), fresh=True, text=True),
            "o": lambda p: HostProxy(
                RemoteObject(self, int(p[0]), frozenset(p[1]), frozenset(p[2])),
                frozenset(p[1]),
                frozenset(p[2]),
                str(p[3]),
            ),  # fmt: skip
            "c": lambda p: self.functions[int(p)],
            "n": lambda p: RemoteIterator(self, int(p)),
        }

    # host -> plan
    def decoder(self) -> Decoder:
        return Decoder(self._handles, guarded=False)

    # plan -> host
    def encode(self, value: Any) -> Any:
        return Encoder(self._handle, _adapt).encode(value)

    def _handle(self, value: Any) -> Any:
        if type(value) is types.FunctionType:  # the usual handle: a plan's thunk
            return {"c": self._function_id(value)}
        if isinstance(value, HostProxy):
            target = value._target
            if isinstance(target, RemoteObject):
                return {"o": target.oid}
        if callable(value) and not isinstance(value, type):
            return {"c": self._function_id(value)}
        # a TypeError, as the plan gets in one process, where the word's answer is refused
        raise TypeError(
            f"{a_kind(type(value).__name__, capital=True)} cannot be handed to the host."
        )

    def _function_id(self, value: Any) -> int:
        key = id(value)
        fid = self._ids.get(key)
        if fid is None:
            fid = self._ids[key] = len(self.functions) + 1
            self.functions[fid] = value
        return fid

    def print(self, line: str) -> None:
        """What the plan prints, to the host (kept in order with its calls)."""
        endpoint = self._lane.endpoint or self.endpoint
        if endpoint is not None:
            endpoint.notify("print", line)

    def notice(self, op: str, payload: Any) -> None:
        """The host's notices: a lane it starts to use (planlang.isolation.lanes)."""
        if op == "lane" and type(payload) is int and 0 <= payload < len(self.lanes):
            pair, self.lanes[payload] = self.lanes[payload], None
            if pair is not None:
                try:
                    threading.Thread(target=self._serve_lane, args=pair, daemon=True,
                                     name=f"planlang-lane-{payload}").start()  # fmt: skip
                except RuntimeError:  # no memory left for its stack: the plan's limit
                    os._exit(LANE_EXIT)

    def _serve_lane(self, read_fd: int, write_fd: int) -> None:
        """A lane's thread: runs each plan function the host calls back on it."""
        reader = FrameReader(read_fd, 2**31, blocking=True)
        endpoint = Lane(reader, write_fd, self.serve, self.notice)
        self._lane.endpoint = endpoint
        endpoint.serve_forever()

    def caller_line(self) -> int | None:
        """The innermost plan line on this thread's stack (the host labels workers by it)."""
        frame: Any = sys._getframe(2)
        filename = self.filename
        while frame is not None:
            if frame.f_code.co_filename == filename:
                return int(frame.f_lineno)
            frame = frame.f_back
        return None

    def call_op(self, wrapper: types.FrameType) -> str:
        """``tail`` when the host call a host word's wrapper (``wrapper``, its frame) makes is
        the last act of the callback this lane's thread runs: the plan function the host
        called back called the word and returns its value at once, with no handler around
        (so nothing of it is left to run, and unwinding it runs no plan code); else ``call``."""
        lane = self._lane.endpoint
        if lane is None or not isinstance(lane, Lane) or not lane.outermost():
            return "call"
        plan = wrapper.f_back
        if (plan is None or plan.f_back is None or plan.f_back.f_code is not _SERVE
                or plan.f_code.co_filename != self.filename
                or not wrapper.f_code.co_filename.startswith("<host word ")):  # fmt: skip
            return "call"
        code = plan.f_code
        tails = self._tails.get(code)
        if tails is None:
            tails = self._tails[code] = tail_calls(code)
        return TAIL if plan.f_lasti in tails else "call"

    def decode(self, data: Any) -> Any:
        return self.decoder().decode(data)

    def ask(self, op: str, payload: Any) -> Any:
        endpoint = self._lane.endpoint or self.endpoint
        assert endpoint is not None
        if len(self.dropped) >= DROPPED:
            self._free(endpoint)
        ok, answer = endpoint.request(op, payload)
        if ok is PLAIN:  # plain JSON: the parser's new dict is already what the plan gets
            return answer
        return self._answered(ok, answer)

    def _free(self, endpoint: Endpoint) -> None:
        """Tell the host which of its iterators the plan dropped: it holds each until then
        (a plan that called a word returning one in a loop made it hold them all)."""
        dropped = self.dropped
        freed = [dropped.pop() for _ in range(len(dropped))]  # pop is atomic: none lost
        endpoint.send(["n", None, "free", freed])

    def _answered(self, ok: Any, answer: Any) -> Any:
        """A host call's answer as the plan gets it (``ask``: PLAIN is as it stands)."""
        if ok is PLAIN:
            return answer
        if not ok:
            raise raised(answer)
        kind = type(answer)
        if kind is str or kind is int or kind is float or kind is bool or answer is None:
            return answer
        return self.decoder().decode(answer)

    # the host calls a plan function back
    def serve(self, op: str, payload: Any) -> tuple[Any, Any]:
        try:
            if op != "callback":
                raise CodecError(f"Unknown request {op!r}.")
            fid, args, kwargs = payload
            fn = self.functions[int(fid)]
            positional, keywords = decode_arguments(args, kwargs, self.decode)
            try:
                result = fn(*positional, **keywords)
            except TailSent as sent:  # its frames are gone once this handler is left
                tail = sent.rid, sent.wrapper_globals, sent.line
            else:
                return self._result(result)
            try:  # what the callback would do after its last host call, that call's answer
                lane = self._lane.endpoint
                assert isinstance(lane, Lane)
                ok, answer = lane.tail_answer(tail[0])
                if ok is TAKEN:  # the host took it as the callback's own: the lane's loop
                    return ok, answer  # serves ``answer``, its next callback
                result = after_call(tail[1], self._answered(ok, answer))
            except BaseException as error:  # noqa: BLE001 - raised where the call was made
                return False, describe(error, filename=self.filename, at=tail[2])
            return self._result(result)
        except BaseException as error:  # noqa: BLE001 - every failure goes back as data
            return False, describe(error, filename=self.filename)

    def _result(self, result: Any) -> tuple[Any, Any]:
        """A callback's result, as it crosses."""
        if flat(result):
            return True, result
        # the usual result of a thunk (a host word's answer), unless a container in it is
        # there twice: the host holds it as one, as it holds the plan's own in one process
        if plain_tree(result):
            return PLAIN, result
        return True, self.encode(result)


_SERVE = Peer.serve.__code__  # the frame that calls a plan function back


def tail_calls(code: types.CodeType) -> frozenset[int]:
    """Where a frame of ``code`` may stand (``f_lasti``) while it waits in a call whose value
    it returns at once: a ``CALL`` and its inline caches (which of them, the version and the
    callee decide), followed by ``RETURN_VALUE``. None in code with any handler (a ``try``
    or ``with`` would run code, or catch the unwinding, after the call)."""
    if code.co_exceptiontable:
        return frozenset()
    found: set[int] = set()
    found_in = instructions(code)  # without its constants' text (deep_stack.instructions)
    for call, after in zip(found_in, found_in[1:], strict=False):
        if call.opname == "CALL" and after.opname == "RETURN_VALUE":
            found.update(range(call.offset, after.offset, 2))
    return frozenset(found)


def _adapt(value: Any) -> Any:
    """The plan's values that are not plain types: read-only host copies, and lazy
    iterables (a generator of thunks), which are taken whole in this process."""
    if isinstance(value, ReadOnlyDict):
        return dict(value)
    if isinstance(value, ReadOnlyList):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list | tuple):
        return list(value)
    if hasattr(value, "__iter__") and not isinstance(value, type | HostProxy):
        return list(value)
    return None


class RemoteWord:
    """A host word, seen from the plan's process: calling it asks the host."""

    __slots__ = ("peer", "wid")

    def __init__(self, peer: Peer, wid: int):
        self.peer, self.wid = peer, wid

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        peer = self.peer
        positional, keywords = encode_arguments(args, kwargs, peer.encode)
        wrapper = sys._getframe(1)  # the host word's wrapper; the plan's frame called it
        plan, filename = wrapper.f_back, peer.filename
        if (plan is not None and plan.f_code.co_filename == filename
                and wrapper.f_code.co_filename != filename):  # fmt: skip
            line: int | None = int(plan.f_lineno)  # what ``caller_line`` finds, found at once
        else:
            line = peer.caller_line()
        payload = [self.wid, positional, keywords, line]
        lane = peer._lane.endpoint  # a tail only on a lane (on the run's channel, no frame
        if lane is not None and peer.call_op(wrapper) == TAIL:  # is looked at)
            assert isinstance(lane, Lane)
            raise TailSent(lane.ask_tail(payload), wrapper.f_globals, line)
        return peer.ask("call", payload)


class RemoteObject:
    """A host object: declared methods and attributes, each asked of the host."""

    def __init__(self, peer: Peer, oid: int, methods: frozenset[str], attributes: frozenset[str]):
        self.peer, self.oid = peer, oid
        self.methods, self.attributes = methods, attributes

    def __getattr__(self, name: str) -> Any:
        if name in self.methods:
            peer, oid = self.peer, self.oid

            def method(*args: Any, **kwargs: Any) -> Any:
                return peer.ask("method", [oid, name, peer.encode(list(args)), peer.encode(kwargs)])

            return method
        if name in self.attributes:
            return self.peer.ask("attr", [self.oid, name])
        raise AttributeError(name)


class RemoteIterator:
    """An iterator a host word returned (``stream``): each item asked of the host."""

    def __init__(self, peer: Peer, nid: int):
        self.peer, self.nid = peer, nid

    def __del__(self) -> None:  # no I/O here: the next host call tells the host (``_free``)
        self.peer.dropped.append(self.nid)

    def __iter__(self) -> RemoteIterator:
        return self

    def __next__(self) -> Any:
        answer = self.peer.ask("next", [self.nid, self.peer.caller_line()])
        if answer == ["stop"]:
            raise StopIteration
        return answer[1]
