"""Frames on a pipe: each message a 4-byte length and a JSON body.

A frame is JSON, read and written by orjson (ten times the standard library's speed here),
with the standard library's json for what orjson declines: nesting past its limits, a lone
surrogate, an int past 64 bits in a message's own fields. Nothing read is ever unpickled or
evaluated; what a body means is the codec's business (``codec``).
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import IO, Any

import orjson

from planlang.isolation.codec import CodecError

__all__ = ["FrameReader", "MAX_FRAME", "dumps", "loads", "read_frame", "write_all",
           "write_frame"]  # fmt: skip

_HEADER = struct.Struct(">I")
MAX_FRAME = 256 * 2**20  # what the host reads from a plan's process in one frame
_json_dumps = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode
_json_loads = json.JSONDecoder().decode
_orjson_dumps, _orjson_loads = orjson.dumps, orjson.loads


def dumps(message: Any) -> bytes:
    """A message as JSON bytes. orjson is ten times the standard library's speed; what it
    declines (nesting past 255 levels, a lone surrogate, an int past 64 bits in a message's
    own fields) the standard library writes."""
    try:
        return _orjson_dumps(message)
    except TypeError:  # orjson.JSONEncodeError
        return _json_dumps(message).encode("ascii")


def loads(body: bytes | memoryview) -> Any:
    """JSON bytes as plain data (dict, list, str, int, float, bool, None), or CodecError."""
    try:
        return _orjson_loads(body)
    except ValueError:  # orjson.JSONDecodeError: what it declines, json may read
        pass
    try:
        return _json_loads(bytes(body).decode("utf-8"))
    except (ValueError, RecursionError) as error:
        raise CodecError(f"A frame was not JSON: {str(error)[:200]}") from None


def write_frame(stream: IO[bytes], message: Any) -> None:
    body = dumps(message)
    stream.write(_HEADER.pack(len(body)) + body)
    stream.flush()


def read_frame(stream: IO[bytes], limit: int = MAX_FRAME) -> Any:
    """The next message, or None at the end of the stream."""
    header = stream.read(4)
    if len(header) < 4:
        return None
    (size,) = _HEADER.unpack(header)
    if size > limit:
        raise CodecError(f"A frame of {size:,} bytes is over the limit of {limit:,}.")
    body = stream.read(size)
    if len(body) < size:
        return None
    return loads(body)


SPIN = 60e-6  # seconds a reader polls before it sleeps: about two wake-ups of a sleeping process
_SPINS = (os.cpu_count() or 1) > 1  # on one CPU the writer cannot run while the reader polls


class FrameReader:
    """Frames from a pipe, read in large chunks: one system call brings in every frame the
    other side has written.

    A reader that finds nothing polls for up to ``SPIN`` before it sleeps, because waking a
    sleeping process costs both sides more than that here (a pipe round trip: 17 µs asleep,
    5 µs polling). The poll adapts: each poll that finds nothing (the other side is busy for
    long, as a model call is, or shares this CPU and cannot run while we poll) halves the next
    one, down to none; each that finds a frame doubles it, up to ``SPIN``. With polling off, a
    run of ``_RETRY`` frames that came soon after the reader slept turns it on again, small.
    """

    __slots__ = ("fd", "limit", "closed", "_buffer", "_spin", "_poll", "_soon")

    def __init__(self, fd: int, limit: int = MAX_FRAME):
        os.set_blocking(fd, False)
        self.fd = fd
        self.limit = limit
        self.closed = False
        self._buffer = bytearray()
        self._spin = SPIN if _SPINS else 0.0
        self._soon = 0
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN)

    def close(self) -> None:
        """Close the pipe (once; no thread may be reading it)."""
        if not self.closed:
            self.closed = True
            os.close(self.fd)

    def read(self) -> Any:
        """The next message, or None at the end of the pipe (the other side is gone)."""
        if self.closed:
            return None
        buffer = self._buffer
        while True:
            have = len(buffer)
            if have >= 4:
                size = _HEADER.unpack_from(buffer)[0]
                if size > self.limit:
                    raise CodecError(f"A frame of {size:,} bytes is over the limit of "
                                     f"{self.limit:,}.")  # fmt: skip
                end = 4 + size
                if have >= end:
                    body = bytes(memoryview(buffer)[4:end])
                    del buffer[:end]
                    return loads(body)
            chunk = self._chunk()
            if not chunk:
                return None
            if not buffer and len(chunk) >= 4:  # the usual case: whole frames, just read
                size = _HEADER.unpack_from(chunk)[0]
                if size <= self.limit and len(chunk) == 4 + size:
                    return loads(memoryview(chunk)[4:])
            buffer += chunk

    def _chunk(self) -> bytes:
        fd = self.fd
        try:
            return os.read(fd, _CHUNK)
        except BlockingIOError:
            pass
        spin = self._spin
        if spin:
            clock = time.perf_counter
            until = clock() + spin
            while clock() < until:
                try:
                    chunk = os.read(fd, _CHUNK)
                except BlockingIOError:
                    continue
                self._spin = min(SPIN, spin * 2)
                return chunk
            self._spin = spin / 2 if spin > 2e-6 else 0.0
        slept = time.perf_counter()
        while True:
            self._poll.poll()
            try:
                chunk = os.read(fd, _CHUNK)
            except BlockingIOError:
                continue  # woken for nothing
            if not self._spin and _SPINS:
                soon = time.perf_counter() - slept < SPIN
                self._soon = self._soon + 1 if soon else 0
                if self._soon >= _RETRY:
                    self._spin, self._soon = SPIN / 8, 0
            return chunk


_CHUNK = 1 << 16
_RETRY = 16


def write_all(fd: int, message: Any) -> None:
    """One frame, whole, to a blocking pipe (the caller holds the pipe's write lock)."""
    body = dumps(message)
    data = _HEADER.pack(len(body)) + body
    written = os.write(fd, data)
    while written < len(data):
        written += os.write(fd, memoryview(data)[written:])
