"""The handles of one isolated run: what the host hands the plan's process for its values.

A host word, host object or host iterator never crosses: the child gets a number, and the
host keeps the value in a table of the run (``words``, ``objects``, ``iterators``). A plan
function the host is handed back arrives as a ``Callback`` of its number. The encoder and
decoder of a run (``encode``, ``decode``) use these tables, so what crosses is plain data.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from planlang.errors import a_kind
from planlang.isolation.codec import HASH_DEPTH, CodecError, Decoder, Encoder, adapt_plain
from planlang.isolation.frames import BUDGET_FLOOR
from planlang.isolation.known_values import KnownValues
from planlang.isolation.lanes import Callback
from planlang.isolation.walks import tuple_depth, walk_size
from planlang.isolation.word_names import plain_signature
from planlang.sandbox.wall import HostObject, HostProxy, HostWord

if TYPE_CHECKING:
    from planlang.sandbox.inprocess import Sandbox

__all__ = ["Handles", "host_adapt"]


def host_adapt(value: Any) -> Any:
    """Host values going in, as ``freeze`` treats them: mappings and sequences as plain."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, list | tuple):
        return list(value) if isinstance(value, list) else tuple(value)
    if isinstance(value, set | frozenset):
        return frozenset(value)
    return None


class Handles:
    """The tables of one run's handles, and its encoder and decoder."""

    def __init__(self, box: Sandbox):
        self.box = box
        self.words: dict[int, Callable[..., Any]] = {}
        self.word_names: dict[int, str] = {}  # a plan's own name for a plain-signature word
        self.objects: dict[int, HostProxy] = {}
        self.iterators: dict[int, Iterator[Any]] = {}
        # weak: a child may name any number of plan functions, frame after frame; the host
        # keeps only those something of its own still holds (one Callback per number then)
        self._callbacks: weakref.WeakValueDictionary[int, Callback] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._known = KnownValues()  # a worker's schema, decoded once a run
        # The largest int taken from the plan's process (``Decoder``): a plan makes one of
        # Limits.int_bits by *, ** and <<, and past it a bit an addition (+ is not checked),
        # allowed here up to a bit a step
        self._int_bits = box.limits.int_bits + box.limits.steps
        # The largest walk of a value handed to host code: a frame within the run's budget
        # without sharing has no more items (each takes 32 bytes of it at least, ``[0,0,...]``)
        self._walk_most = max(box.limits.memory_mb * 2**20, BUDGET_FLOOR) // 32

    def _new_id(self, table: dict[int, Any], value: Any) -> int:
        key = next(self._ids)  # one numbering for all: tables shrink (iterators: ``free``)
        table[key] = value
        return key

    def _object(self, proxy: HostProxy) -> Any:
        oid = self._new_id(self.objects, proxy)
        return {"o": [oid, sorted(proxy._methods), sorted(proxy._attributes), proxy._label]}

    def _host_handle(self, label: str) -> Callable[[Any], Any]:
        def handle(value: Any) -> Any:
            if isinstance(value, HostWord):
                # a word that takes text gets its arguments as text made in the plan's process
                # (priced there): the host never stringifies a plan value (issue 13, item 21)
                wid = self._new_id(self.words, value.fn)
                if not value.text:
                    self._name_word(wid, value, value.fn, label)
                return {"wt" if value.text else "w": wid}
            if isinstance(value, HostObject):
                proxy = HostProxy(value.obj, frozenset(value.methods),
                                  frozenset(value.attributes), value.name or label)  # fmt: skip
                return self._object(proxy)
            if isinstance(value, HostProxy):
                return self._object(value)
            if isinstance(value, Callback) and value.session is self:
                return {"c": value.cid}
            if callable(value) and not isinstance(value, type):
                wid = self._new_id(self.words, value)
                self._name_word(wid, value, value, label)
                return {"w": wid}
            return self._object(HostProxy(value, frozenset(), frozenset(), label))

        return handle

    def _name_word(self, wid: int, value: Any, fn: Callable[..., Any], label: str) -> None:
        if value is self.box.host.get(label) and plain_signature(fn):  # a word at the top
            self.word_names[wid] = label

    def _result_handle(self, where: str) -> Callable[[Any], Any]:
        def handle(value: Any) -> Any:
            if isinstance(value, Callback) and value.session is self:
                return {"c": value.cid}
            if isinstance(value, HostProxy):
                return self._object(value)
            raise CodecError(
                f"{where} gave "
                f"{a_kind(getattr(type(value), 'plan_kind', type(value).__name__))}, "
                "which is not plain data."
            )

        return handle

    def encode(self, value: Any, where: str = "The host") -> Any:
        return Encoder(self._result_handle(where), adapt_plain).encode(value)

    def _callback(self, cid: Any) -> Callback:
        cid = int(cid)
        with self._lock:
            found = self._callbacks.get(cid)
            if found is None:
                found = self._callbacks[cid] = Callback(self, cid)  # type: ignore[arg-type]  # a _Session
        return found

    def decode(self, data: Any, keywords: bool = False, handed: bool = True) -> Any:
        """What the child sent, bounded (codec.Decoder with guarded keys); ``keywords``: a
        call's keyword arguments, whose plain values sent before are parsed again, unwalked.
        ``handed``: for host code (a word's arguments, a callback's answer), so its walk is
        bounded too (``codec.walk_size``): no larger than that of the largest value a frame
        could bring without sharing, and its tuples nest no deeper than host code may hash
        (``codec.HASH_DEPTH``). The run's result is not: it is the plan's, as in one process,
        shared parts shared, as deep as the plan made it."""
        decoder = Decoder({"c": self._callback, "o": lambda p: self.objects[int(p)]},
                          guarded=True, int_bits=self._int_bits)  # fmt: skip
        try:
            value = self._known.keywords(data, decoder.decode) if keywords else decoder.decode(
                data)  # fmt: skip
            if handed and decoder.shared and walk_size(value, self._walk_most) > self._walk_most:
                raise CodecError(
                    f"A value whose parts are shared so that a walk of it passes "
                    f"{self._walk_most:,} items cannot be handed to the host."
                )
            # a table (a value nested past the tree's depth) may hold tuples nested so deep
            # that host code hashing one would overflow its thread's stack (codec.HASH_DEPTH)
            if handed and decoder.tables and tuple_depth(value, HASH_DEPTH) > HASH_DEPTH:
                raise CodecError(
                    f"A tuple nested more than {HASH_DEPTH:,} levels within tuples cannot be "
                    "handed to the host."
                )
            return value
        except RecursionError:
            raise CodecError("A value from the plan nests too deeply for the host.") from None
        except CodecError:
            raise
        # a handle's number that is none (JSON's Infinity, a list): a CodecError, so a
        # callback's answer ends the run as a protocol break, never as the word's own error
        except (KeyError, ValueError, TypeError, OverflowError) as error:
            raise CodecError(f"A value from the plan could not be read: {error}") from None
