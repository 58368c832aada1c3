"""Frames on a pipe: each message a header (length, time sent) and a JSON body.

A frame is JSON, read and written by orjson (ten times the standard library's speed here),
with the standard library's json for what orjson declines: nesting past its limits, a lone
surrogate, an int past 64 bits in a message's own fields. Nothing read is ever unpickled or
evaluated; what a body means is the codec's business (``codec``).
"""

from __future__ import annotations

import json
import math
import os
import select
import struct
import threading
import time
from typing import IO, Any

import orjson

from planlang.isolation.codec import CodecError

__all__ = ["BUDGET_FLOOR", "FrameReader", "FrameTooCostly", "MAX_FRAME",
           "decoded_cost", "dumps", "loads", "plain_copy", "read_frame", "write_all",
           "write_frame"]  # fmt: skip

# A frame: its body's length, the time it was sent (CLOCK_MONOTONIC, one clock for every
# process of the machine: the reader learns how soon answers come), then the JSON body.
_HEADER = struct.Struct(">Id")
assert _HEADER.size == 12  # written as 12 on the read's fast path
MAX_FRAME = 256 * 2**20  # what the host reads from a plan's process in one frame
# Bytes of the reader's memory one byte of JSON can become, at most (measured with tracemalloc):
# ``[],`` is three bytes and a list of 64; ``{"":`` nested, five bytes a dict of 184 (37 a byte).
_EXPANSION = 40
# What the host takes from one frame, at least, whatever the plan's memory limit: a result a
# small limit allows in one process can be larger as JSON (one shared str becomes many).
BUDGET_FLOOR = 256 * 2**20
# A request larger than this is held to the run's budget with every other being served, and a
# callback's answer while the host refers to it (``FrameReader.set_budget``, ``_hold``): each
# is a copy here where one process holds one object. Past 64 KiB only, answers of 60 KB a host
# word gathered made the host grow by 690 MB on a plan of 256 MB, and requests of 60 KB nested
# on 8 threads (a word calling back a plan function that calls it again) by 1 GB (REDTEAM11).
# Below this a frame costs the host about what a reference to its value does.
HELD_MIN = 1024


class FrameTooCostly(CodecError):
    """A frame whose decoded objects could take more memory than the reader allows."""


_json_raw = json.JSONEncoder(separators=(",", ":"), check_circular=False, ensure_ascii=False).encode
# The longest number the standard library's json may read in a frame, whatever the host's
# ``sys.int_max_str_digits`` (CPython's default: 4,300): a host that set that to 0 converted a
# plan process's 2,000,000 digits in quadratic time, 15 s with the interpreter's lock held,
# and handed the host word a 6.6-million-bit int no bound had looked at (REDTEAM14). orjson
# declines every number past a double, so such a frame always comes here.
MAX_DIGITS = 4300


def _bounded_int(digits: str) -> int:
    if len(digits) > MAX_DIGITS + 1:  # a sign and MAX_DIGITS digits
        raise ValueError(f"a number of {len(digits):,} digits is longer than a frame may hold")
    return int(digits)


_json_loads = json.JSONDecoder(parse_int=_bounded_int).decode
_orjson_dumps, _orjson_loads = orjson.dumps, orjson.loads
_pack, _monotonic = _HEADER.pack, time.monotonic


def dumps(message: Any) -> bytes:
    """A message as JSON bytes. orjson is ten times the standard library's speed; what it
    declines (nesting past 255 levels, a lone surrogate, an int past 64 bits in a message's
    own fields) the standard library writes (``_slow``)."""
    try:
        return _orjson_dumps(message)
    except TypeError:  # orjson.JSONEncodeError
        return _slow(message)


def _slow(message: Any) -> bytes:
    """The standard library's JSON, a lone surrogate written as itself (``surrogatepass``):
    escaped, a high and a low one side by side (``"\\ud83d\\ude00"``) read back as the one
    character they pair to, so a plan's two-character text crossed as another, and two dict
    keys as one (red team 22). ``loads`` reads them back one for one."""
    return _json_raw(message).encode("utf-8", "surrogatepass")


def loads(body: bytes | memoryview) -> Any:
    """JSON bytes as plain data (dict, list, str, int, float, bool, None), or CodecError."""
    try:
        return _orjson_loads(body)
    except ValueError:  # orjson.JSONDecodeError: what it declines, json may read
        pass
    try:
        return _json_loads(bytes(body).decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError) as error:
        raise CodecError(f"A frame was not JSON: {str(error)[:200]}") from None


def plain_copy(value: Any, most: int, held: Any = None, budget: int | None = None) -> Any:
    """A copy of plain JSON data, as a crossing makes it (written and read again), or None
    when it is over ``most`` bytes as JSON. (None is never plain data's copy here: the
    callers copy dicts and lists.) A copy past ``HELD_MIN`` is kept in ``held`` (a
    ``queued.Queued``), as a callback's answer read from a frame is."""
    try:
        body = _orjson_dumps(value)
    except TypeError:  # what orjson declines, the standard library writes
        body = _slow(value)
    if len(body) > most:
        return None
    copied = loads(body)
    if len(body) > HELD_MIN and held is not None:
        held.keep(copied, decoded_cost(body), budget)
    return copied


def write_frame(stream: IO[bytes], message: Any) -> None:
    body = dumps(message)
    stream.write(_HEADER.pack(len(body), time.monotonic()) + body)
    stream.flush()


def read_frame(stream: IO[bytes], limit: int = MAX_FRAME) -> Any:
    """The next message from a file, or None at its end."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    size, _sent = _HEADER.unpack(header)
    if size > limit:
        raise CodecError(f"A frame of {size:,} bytes is over the limit of {limit:,}.")
    body = stream.read(size)
    if len(body) < size:
        return None
    return loads(body)


SPIN = 200e-6  # seconds a reader polls before it sleeps, when answers come that soon
_SPINS = (os.cpu_count() or 1) > 1  # on one CPU the writer cannot run while the reader polls
_CHUNK = 1 << 16
_RETRY = 16
_LONGEST_POLL = 2**31 - 1  # milliseconds: poll() takes an int; longer waits loop


def decoded_cost(data: bytes) -> int:
    """Bytes of memory the JSON ``data`` can take decoded, at most (FrameReader.set_budget)."""
    # a bound, not a guess: its text (four bytes a character once one is wide, as a
    # byte past ASCII or an escape may make it), a dict, a list, an item's pointer, a
    # string (two quotes: a str's header), a dict's entry (its slots, as it grows)
    narrow = data.isascii() and b"\\u" not in data
    return ((len(data) if narrow else 4 * len(data))
            + 200 * data.count(b"{") + 64 * data.count(b"[")
            + 32 * data.count(b",") + 40 * data.count(b'"')
            + 96 * data.count(b":"))  # fmt: skip


class FrameReader:
    """Frames from a pipe, read in large chunks: one system call brings in every frame the
    other side has written.

    A reader that finds nothing polls for up to ``SPIN`` before it sleeps, because waking a
    sleeping process costs far more here than a poll: a pipe round trip is 17 µs asleep and
    5 µs polling on a quiet machine, and a CPU that went idle can take 150 µs to wake. The
    poll adapts (``_learn``): it is kept while it finds frames, and halved, down to none, while
    it misses them, whether the other side is busy for long (a model call) or shares this CPU
    (then polling only keeps it from running). With polling off, frames that keep coming soon
    (each says when it was sent, on the clock every process shares) turn it on again, small.
    Between two polls it yields its CPU (``sched_yield``: back at once if nothing else waits
    for it): the other side is often woken on this very CPU, where a plain poll kept it
    waiting for the poll's end (unpinned, 400 µs of a one-line plan's 1.5 ms here).
    """

    __slots__ = ("fd", "limit", "closed", "budget", "_cheap", "_buffer", "_spin", "_poll",
                 "_soon", "_came", "_blocking", "_one_at_a_time", "held")  # fmt: skip
    _unpack = _HEADER.unpack_from

    def __init__(self, fd: int, limit: int = MAX_FRAME, *, blocking: bool = False):
        """``blocking``: a pipe only one thread ever reads, at a time: a read that need not
        poll first (no deadline, no polling) is one blocking read, one system call where a
        poll and a read are two or three."""
        os.set_blocking(fd, blocking)
        self._blocking = blocking
        self.fd = fd
        self.limit = limit
        self._one_at_a_time: threading.Lock | None = None
        self.held: Any = None  # a queued.Queued: requests being served, answers kept
        self.budget: int | None = None
        self._cheap = limit  # frames up to this size cannot decode past the budget: not counted
        self.closed = False
        self._buffer = bytearray()
        self._spin = SPIN if _SPINS else 0.0
        self._soon = 0
        self._came = "waiting"  # how the last chunk came: "waiting", "polled" or "slept"
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        self._poll = poller.poll  # bound once: it is called on every read

    def set_budget(self, nbytes: int, one_at_a_time: threading.Lock | None = None,
                   held: Any = None) -> None:  # fmt: skip
        """Refuse frames whose decoded objects could take more than about ``nbytes`` of this
        process's memory (FrameTooCostly): a frame of ``[],`` repeated decodes to twenty times
        its size. A frame that small enough cannot is read as it is; a larger one has its
        containers, items, strings and keys counted first (bytes.count, a few milliseconds a
        megabyte). The bound is on what the decoded value keeps; the pipe's bytes (up to
        ``limit``) and the parser's own work are not counted. ``one_at_a_time``, a lock the
        readers of one run share (its channel and its lanes), is held while a frame past
        that size is read and decoded: the run's readers hold one such frame at a time.
        ``held`` (a ``queued.Queued`` the run's readers share) counts each request past
        ``HELD_MIN`` while it is served, all of them held to ``nbytes`` together: its decoded
        arguments live as long as its host word runs, and a plan nesting host calls (a word
        that calls back a plan function that calls the word again with the same large value)
        made the host hold a copy a level, past any one frame's budget. The server releases
        each (``Queued.take`` of the request's payload) once served. Each answer past
        ``HELD_MIN`` (a callback's) is counted there too, while the host refers to it."""
        self.budget = nbytes
        self._cheap = min(self.limit, nbytes // _EXPANSION)
        self._one_at_a_time = one_at_a_time
        self.held = held

    @property
    def cheap(self) -> int:
        """The largest frame read as it is: its decoded value cannot pass the budget."""
        return self._cheap

    def _afford(self, body: bytes | bytearray | memoryview) -> None:
        assert self.budget is not None
        data = bytes(body)
        cost = decoded_cost(data)
        if cost > self.budget:
            raise FrameTooCostly(
                f"A value of {len(data):,} bytes from the plan's process would take about "
                f"{cost / 2**20:,.0f} MiB here, past the {self.budget / 2**20:,.0f} MiB the "
                "host takes from one frame (the plan's memory limit, and at least "
                f"{BUDGET_FLOOR // 2**20} MiB)."
            )

    def _hold(self, message: Any, body: bytes | memoryview) -> None:
        """Count a request (its payload, by identity) among those being served, or a
        callback's answer among those the host keeps (``queued.Queued.keep``)."""
        if type(message) is not list:
            return
        kind, size = message[0] if message else None, len(message)
        if kind == "q" and size == 5:
            payload = message[4]
            if type(payload) is list or type(payload) is dict:  # new, so its id is its own
                self.held.count(payload, decoded_cost(bytes(body)), self.budget)
        elif (kind == "a" and size == 4) or (kind == "p" and size == 3):
            answer = message[-1]
            if type(answer) is list or type(answer) is dict or type(answer) is str:
                self.held.keep(answer, decoded_cost(bytes(body)), self.budget)

    def close(self) -> None:
        """Close the pipe (once; no thread may be reading it)."""
        if not self.closed:
            self.closed = True
            os.close(self.fd)

    def read(self, until: float | None = None, spin: bool = True) -> Any:
        """The next message, or None at the end of the pipe (the other side is gone), or
        TimeoutError once ``until`` (on ``time.monotonic``) has passed. ``spin=False``: sleep
        at once (other threads of this process have work: a polling thread would keep the
        interpreter's lock from them)."""
        if self.closed:
            return None
        # when the last chunk came says how long to poll; a blocking read does not ask
        started = 0.0 if self._blocking and until is None and not spin else _monotonic()
        buffer = self._buffer
        if not buffer:  # the usual case: one whole frame in one read
            chunk = self._chunk(until, spin)
            if len(chunk) >= 12:  # _HEADER.size
                size, sent = self._unpack(chunk)
                if len(chunk) == 12 + size and size <= self._cheap:
                    if self._came != "waiting":
                        self._learn(sent - started)
                    try:
                        message = _orjson_loads(memoryview(chunk)[12:])
                    except ValueError:
                        message = loads(memoryview(chunk)[12:])
                    if size > HELD_MIN and self.held is not None:
                        self._hold(message, memoryview(chunk)[12:])
                    return message
            if not chunk:
                return None
            buffer += chunk
        held = None
        try:
            while True:
                have = len(buffer)
                if have >= _HEADER.size:
                    size, sent = _HEADER.unpack_from(buffer)
                    if size > self.limit:
                        raise CodecError(f"A frame of {size:,} bytes is over the limit of "
                                         f"{self.limit:,}.")  # fmt: skip
                    if size > self._cheap and held is None and self._one_at_a_time:
                        held = self._take(self._one_at_a_time, until)
                    end = _HEADER.size + size
                    if have >= end:
                        body = bytes(memoryview(buffer)[_HEADER.size : end])
                        del buffer[:end]
                        self._learn(sent - started)
                        if size > self._cheap:
                            self._afford(body)
                        message = loads(body)
                        if size > HELD_MIN and self.held is not None:
                            self._hold(message, body)
                        return message
                chunk = self._chunk(until, spin)
                if not chunk:
                    return None
                buffer += chunk
        finally:
            if held is not None:
                held.release()

    @staticmethod
    def _take(lock: threading.Lock, until: float | None) -> threading.Lock:
        """The run's lock for a large frame (its other readers take none meanwhile), waited
        for no longer than ``until``: a frame a plan process never finishes holds it."""
        if until is None:
            lock.acquire()
        elif not lock.acquire(timeout=max(0.0, until - time.monotonic())):
            raise TimeoutError("the time ran out")
        return lock

    def _learn(self, gap: float) -> None:
        """How long to poll next time, from how this frame came: found while polling, keep
        polling in full; polled for and missed, poll half as long (whether the other side was
        busy for long, or shares this CPU and could only run once we stopped: then it answers
        just after we sleep, and polling again would only keep it waiting); with polling off,
        a run of ``_RETRY`` frames each sent within ``SPIN`` of the read's start tries it again,
        small."""
        came = self._came
        if came == "polled":
            self._spin = SPIN
        elif came == "slept":
            if self._spin:
                self._spin = self._spin / 2 if self._spin > 4e-6 else 0.0
            elif _SPINS:
                self._soon = self._soon + 1 if gap < SPIN else 0
                if self._soon >= _RETRY:
                    self._spin, self._soon = SPIN / 8, 0

    def _chunk(self, until: float | None, may_spin: bool) -> bytes:
        """The next bytes of the pipe, waited for. Asking ``poll`` whether there are any costs
        0.6 µs here, where a read that finds none raises, at 2 µs: so polling comes first."""
        poll = self._poll
        self._came = "waiting"  # it was there already: says nothing about polling
        if self._blocking and until is None and not (may_spin and self._spin):
            return os.read(self.fd, _CHUNK)  # sleeps until the other side writes, or ends
        if poll(0):
            return self._ready(until)
        spin = self._spin if may_spin else 0.0
        if spin:
            clock = time.monotonic
            spun = clock() + spin
            while clock() < spun:
                if poll(0):
                    self._came = "polled"
                    return self._ready(until)
                os.sched_yield()  # the other side may be waiting for this CPU
        self._came = "slept" if may_spin else "waiting"
        while True:
            if until is None:
                poll()
            else:
                left = until - time.monotonic()
                wait = min(max(1, math.ceil(left * 1000)), _LONGEST_POLL)
                if left <= 0 or not poll(wait):
                    if time.monotonic() >= until:
                        raise TimeoutError("the time ran out")
                    continue
            try:
                return os.read(self.fd, _CHUNK)
            except BlockingIOError:
                continue  # woken for nothing

    def _ready(self, until: float | None) -> bytes:
        """Read what ``poll`` said is there (b"" at the pipe's end)."""
        try:
            return os.read(self.fd, _CHUNK)
        except BlockingIOError:  # taken by nobody else (one reader at a time): not expected
            return self._chunk(until, False)


def write_all(fd: int, message: Any) -> None:
    """One frame, whole, to a blocking pipe (the caller holds the pipe's write lock)."""
    try:
        body = _orjson_dumps(message)
    except TypeError:  # as ``dumps``
        body = _slow(message)
    data = _pack(len(body), _monotonic()) + body
    written = os.write(fd, data)
    while written < len(data):
        written += os.write(fd, memoryview(data)[written:])
