"""The host's memo of the plain values a plan sends it again and again: a worker's schema.

A plan that fans out 1,000 workers sends ``agent`` the same schema 1,000 times, and the host
decoded it 1,000 times: the codec's walk of its nested dicts cost about 50 µs a call here, more
than a tenth of the host's work for a worker under process isolation. So a run remembers, for a
few keyword arguments it met, the JSON of what was sent (the tree as the codec encoded it, which
says exactly what it decodes to) and the JSON of the plain value it decoded to; the next time the
same tree comes, the value is parsed from that JSON (a fresh copy, made by orjson in C), with no
walk. Only values that are plain data as they stand (``plain.plain_tree``: dicts with str keys,
lists, scalars that cross as themselves, nothing shared) are remembered; a tree that refers to a
value sent before (``{"r": n}``) anywhere in the call's keywords is decoded as before, whole, by
the codec, since its numbering spans them all. So what a host word gets, and every error, is
what the codec's decoder gives; only the work to make it is saved.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import orjson

from planlang.isolation.plain import plain_tree

__all__ = ["KnownValues"]

KNOWN = 16  # values remembered per run, the oldest let go first (a plan has few schemas)
LARGEST = 64 * 1024  # bytes of JSON a remembered value may take (twice: as sent, as decoded)
_REFERENCE = b'{"r":'  # a reference tag; inside a JSON string its quote would be escaped

_dumps, _loads = orjson.dumps, orjson.loads


class KnownValues:
    """One run's memo, from a keyword argument's tree as sent to the JSON of its value."""

    __slots__ = ("_known", "_lock")

    def __init__(self) -> None:
        self._known: dict[bytes, bytes] = {}
        self._lock = threading.Lock()  # for a change: a run's host threads decode at once

    def keywords(self, tree: Any, decode: Callable[[Any], Any]) -> dict[Any, Any]:
        """A call's keyword arguments, as ``decode(tree)`` gives them (``decode``: a fresh
        decoder's, which keeps its numbering and bounds over all it is given)."""
        pairs = tree.get("d") if type(tree) is dict and len(tree) == 1 else None
        if type(pairs) is not list or len(pairs) % 2:
            return decode(tree)  # not a plain dict of keywords: the codec says what it is
        sent: list[bytes | None] = []
        for i in range(0, len(pairs), 2):
            value = pairs[i + 1]
            if type(pairs[i]) is not str:
                return decode(tree)
            kind = type(value)
            if kind is not dict and (kind is not list or _scalars(value)):
                sent.append(None)  # a scalar, or scalars: the codec's own quick path
                continue
            try:
                as_sent = _dumps(value)
            except TypeError:  # orjson.JSONEncodeError: past its bounds; the codec decides
                return decode(tree)
            if _REFERENCE in as_sent:
                return decode(tree)  # numbering across the keywords: decoded whole
            sent.append(as_sent)
        known = self._known
        out: dict[str, Any] = {}
        for n, text in enumerate(sent):
            name, value = pairs[2 * n], pairs[2 * n + 1]
            if text is None:
                out[name] = decode(value)
                continue
            found = known.get(text)  # no lock to read: one dict lookup is atomic
            if found is not None:
                out[name] = _loads(found)
                continue
            value = decode(value)
            out[name] = value
            if len(text) <= LARGEST and plain_tree(value):
                try:
                    plain = _dumps(value)
                except TypeError:
                    continue
                if len(plain) <= LARGEST:
                    with self._lock:
                        if len(known) >= KNOWN:
                            del known[next(iter(known))]  # the first remembered goes first
                        known[text] = plain
        return out


def _scalars(items: list[Any]) -> bool:
    for item in items:
        kind = type(item)
        if kind is dict or kind is list:
            return False
    return True
