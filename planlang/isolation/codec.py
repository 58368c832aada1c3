"""The codec between a plan's process and the host's: plain data as length-prefixed JSON.

Nothing that crosses is ever unpickled or evaluated: a frame is JSON (``frames``), and the
decoder builds
only str, int, float, bool, None, list, dict, tuple, set and frozenset, plus the handles each
side hands it (a host word, a host object, a plan function, a host iterator), which stay
numbers until the side that owns them looks them up. Decoding is the copy: neither side ever
holds an object of the other. Shared containers stay shared (``x = [x, x]`` sixty times is
sixty containers, not 2**60), and the host's decoder refuses what would make it walk without
bound: hash keys whose hashing cost or collisions an adversary chose (docs/SECURITY.md).

Encoding of values (JSON on the wire)::

    str, bool, None, finite float, small int    as themselves
    int past 2**63                       {"i": hex}
    nan, inf, -inf                       {"x": "nan"} (JSON has no such numbers)
    list                                 [items]
    dict                                 {"d": [k1, v1, k2, v2, ...]}
    tuple / set / frozenset              {"t": [...]} / {"s": [...]} / {"f": [...]}
    a container seen before              {"r": n}   (n-th container, in the order met)
    a container past TABLE_DEPTH levels  {"g": [node, node, ...]}: it and all it holds, one
                                         node a container (as above), each container in it
                                         {"r": n}; node i is container first + i, where
                                         first is the number the table's own container has
    handles                              {"w": id}, {"wt": id} (a word that takes text),
                                         {"o": [id, methods, attributes, label]},
                                         {"c": id}, {"n": id}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from planlang.isolation.codec_common import (
    _CONTAINERS,
    _FUNCTION,
    _HOLDS_ITSELF,
    _PENDING,
    CodecError,
)
from planlang.isolation.codec_tables import decode_table, encode_table
from planlang.isolation.plain import BIG as _BIG
from planlang.isolation.plain import flat

__all__ = ["CodecError", "Decoder", "Encoder", "decode_arguments", "encode_arguments"]


# Hashing a set member or dict key that is a tuple walks it; a plan can make that walk 2**60
# nodes (aliasing) or make every key collide. The host decoder bounds both.
# An int's hash is not cached either and walks all its digits: a big one counts by its size.
HASH_BUDGET = 1_000_000  # tuple nodes and int digits the host may walk hashing a frame's keys
MAX_COLLISIONS = 32  # keys of one set or dict that may share a hash
# Levels of tuples within tuples the host hashes, or hands host code (``walks.tuple_depth``):
# CPython 3.11 hashes a tuple by recursing in C with no check, about 64 bytes a level, and the
# host's threads have ordinary stacks (8 MiB; 640 KB for this). A plan's process hashes
# deeper ones on a stack its steps need, as one process does.
HASH_DEPTH = 10_000
_TOO_DEEP_TO_HASH = (f"A tuple nested more than {HASH_DEPTH:,} levels within tuples cannot "
                     "cross to the host.")  # fmt: skip
# Levels of containers encoded as a tree; a container deeper (``x = [x]`` in a loop, 100,000
# times) goes as a table, with all it holds (``{"g": ...}``): its JSON nests a few levels
# whatever the value's depth, and each side reads it in a loop. The tree above stays within
# what orjson writes and reads (255 levels: a dict is two, ``{"d": [``), and within Python's
# recursion limit, which the tree's encoder and decoder recurse by (two frames a level).
TABLE_DEPTH = 64


EMPTY_KWARGS: dict[str, list[Any]] = {"d": []}


def encode_arguments(args: tuple[Any, ...], kwargs: dict[str, Any], encode: Callable[[Any], Any]
                     ) -> tuple[Any, Any]:  # fmt: skip
    """A call's arguments, with the common cases (none, or plain scalars) on a fast path."""
    positional: Any = list(args)
    for value in args:
        kind = type(value)  # flat(), inline: this runs for every argument of every call
        if kind is str or kind is bool or value is None:
            continue
        if kind is int and -_BIG < value < _BIG or kind is float and value - value == 0.0:
            continue
        positional = encode(positional)
        break
    return positional, (encode(kwargs) if kwargs else EMPTY_KWARGS)


def decode_arguments(args: Any, kwargs: Any, decode: Callable[[Any], Any]) -> tuple[Any, Any]:
    """The other side of ``encode_arguments``."""
    positional = args if type(args) is list and _scalars(args) else decode(args)
    return positional, ({} if kwargs == EMPTY_KWARGS else decode(kwargs))


def _scalars(items: list[Any]) -> bool:
    """Whether a decoded list holds only JSON scalars."""
    for v in items:
        k = type(v)
        if not (k is str or k is int or k is float or k is bool or v is None):
            return False
    return True


Handle = Callable[[Any], Any]


class Encoder:
    """Values into the JSON tree above. ``handle(obj)`` encodes whatever is not plain data
    (returns a tagged dict or raises ``CodecError``); ``adapt(obj)`` may first turn an object
    into plain data (a pydantic model into its dump), returning it or None."""

    __slots__ = ("handle", "adapt", "memo", "count")

    def __init__(self, handle: Handle, adapt: Callable[[Any], Any] | None = None):
        self.handle = handle
        self.adapt = adapt
        self.memo: dict[int, tuple[Any, int]] = {}
        self.count = 0

    def encode(self, value: Any, depth: int = 0) -> Any:
        """``value`` encoded; ``depth``: the containers around it (the tree's recursion)."""
        kind = type(value)
        if kind is str or kind is bool or value is None:
            return value
        if kind is float:
            return value if value - value == 0.0 else {"x": repr(value)}
        if kind is int:
            return value if -_BIG < value < _BIG else {"i": format(value, "x")}
        if kind is _FUNCTION:  # a plan's function (a fan-out's thunks): never data, never memo'd
            return self.handle(value)
        seen = self.memo.get(id(value))
        if seen is not None:
            return {"r": seen[1]}
        if kind is list or kind is dict or kind is tuple or kind is set or kind is frozenset:
            if depth >= TABLE_DEPTH:
                return encode_table(self, value)
            index = self.count
            self.count += 1
            self.memo[id(value)] = (value, index)
            encode = self.encode
            depth += 1
            if kind is list:
                for v in value:
                    if not flat(v):
                        return [encode(v, depth) for v in value]
                return value  # a list of scalars is its own encoding (written out at once)
            if kind is dict:
                pairs = []
                for k, v in value.items():  # str keys and scalar values inline: the common case
                    pairs.append(k if type(k) is str else encode(k, depth))
                    pairs.append(v if flat(v) else encode(v, depth))
                return {"d": pairs}
            tag = "t" if kind is tuple else "s" if kind is set else "f"
            return {tag: [encode(v, depth) for v in value]}
        if self.adapt is not None and kind is not _FUNCTION:  # a function is never data
            plain = self.adapt(value)
            if plain is not None:
                index = self.count
                encoded = self.encode(plain, depth)
                if type(plain) in _CONTAINERS:  # the original shares its copy's number
                    self.memo[id(value)] = (value, index)
                return encoded
        return self.handle(value)


def _plain_subclass(value: Any) -> Any:
    """dict and list subclasses (the sandbox's read-only ones, an OrderedDict, a named
    tuple) as the plain type, or None. Any ``Mapping`` is a dict, as the sandbox's ``thaw``
    copies it in one process (a ``MappingProxyType``, a ``ChainMap``: REDTEAM14)."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, list):
        return list(value)
    if isinstance(value, tuple):
        return list(value)
    return None


class Decoder:
    """The JSON tree back into values. ``handles`` maps a handle's tag to a function of its
    payload. ``guarded`` (the host's decoder) bounds the hashing of keys; ``int_bits`` (the
    host's) refuses integers past what a plan can make. A plan's process that skips its
    limits sent the host any: a 16 MB frame is an int of 64 million bits, which a host word
    squares in minutes with the interpreter's lock held (REDTEAM11)."""

    __slots__ = ("handles", "made", "guarded", "budget", "int_bits", "shared", "_costs",
                 "_open", "_fills", "tables")  # fmt: skip

    def __init__(self, handles: dict[str, Callable[[Any], Any]], *, guarded: bool,
                 int_bits: int | None = None):  # fmt: skip
        self.handles = handles
        self.made: list[Any] = []
        self.guarded = guarded
        self.budget = HASH_BUDGET
        self.int_bits = int_bits
        self.shared = False  # a container was referred to again: ``walk_size`` may pass its size
        self._costs: dict[int, tuple[int, int]] = {}  # a tuple's id -> its cost, its height
        self.tables = False  # a table was read: tuples may nest past what the tree allows
        # A tuple met again inside itself (``t = ([],); t[0].append(t)``, which a plan may
        # make): a ``_Later`` stands in its place, handed to the container decoding it
        # (``_open``, until that container is made), which notes where it went (``_fills``:
        # the tuple's number -> the list or dict and the place); the tuple, once made, is put
        # in each. Within a tuple or a set itself, or as a key, there is no place to fill in
        # later: refused.
        self._open: list[_Later] = []
        self._fills: dict[int, list[tuple[Any, Any]]] = {}

    def decode(self, data: Any) -> Any:
        kind = type(data)
        if kind is str or kind is int or kind is bool or data is None or kind is float:
            return data
        made = self.made
        decode = self.decode
        if kind is list:
            if _scalars(data):
                made.append(data)  # scalars only: the list JSON gave is new, and ours
                return data
            items: list[Any] = []
            made.append(items)
            items.extend(decode(v) for v in data)
            if self._open:
                self._note(items, enumerate(items))
            return items
        if kind is not dict or len(data) != 1:
            raise CodecError("A frame held a value the protocol does not allow.")
        ((tag, payload),) = data.items()
        if tag == "r":
            if type(payload) is not int or not 0 <= payload < len(made):
                raise CodecError("A frame referred to a value it had not sent.")
            found = made[payload]
            self.shared = True
            if found is _PENDING:
                later = _Later(payload)
                self._open.append(later)
                return later
            return found
        if tag == "i":
            if type(payload) is not str:
                raise CodecError("A frame held a malformed number.")
            bits = self.int_bits
            if bits is None:
                return int(payload, 16)
            # refused before converting if its digits say so ("-" and a digit of slack)
            number = int(payload, 16) if len(payload) <= bits // 4 + 2 else None
            if number is None or number.bit_length() > bits:
                raise CodecError(f"An integer past the plan's limit of {bits:,} bits cannot "
                                 "cross.")  # fmt: skip
            return number
        if tag == "x":
            if type(payload) is not str or payload not in _NOT_FINITE:
                raise CodecError("A frame held a number the protocol does not allow.")
            return float(payload)
        if tag == "d":
            fresh: dict[Any, Any] = {}
            made.append(fresh)
            if type(payload) is not list or len(payload) % 2:
                raise CodecError("A frame held a malformed dict.")
            simple = True  # str keys, and values that are scalars or lists of scalars
            for i in range(0, len(payload), 2):
                item = payload[i + 1]
                kind = type(item)
                if type(payload[i]) is not str or not (
                    kind is str or kind is int or kind is float or kind is bool or item is None
                    or (kind is list and _scalars(item))
                ):  # fmt: skip
                    simple = False
                    break
            if simple:  # no key to check, and each list is new and ours, as JSON gave it
                for i in range(1, len(payload), 2):
                    if type(payload[i]) is list:
                        made.append(payload[i])  # numbered in the order sent
                fresh.update(zip(payload[0::2], payload[1::2], strict=True))
                return fresh
            items = [decode(v) for v in payload]  # in the order sent: references count so
            keys = items[0::2]
            if self._open and any(type(key) is _Later for key in keys):
                raise CodecError(_HOLDS_ITSELF)
            if self.guarded:
                self._check_keys(keys)
            fresh.update(zip(keys, items[1::2], strict=True))
            if self._open:
                self._note(fresh, fresh.items())
            return fresh
        if tag in ("t", "s", "f"):
            index = len(made)
            made.append(_PENDING)
            if type(payload) is not list:
                raise CodecError("A frame held a malformed container.")
            values = [decode(v) for v in payload]
            if self._open and any(type(v) is _Later for v in values):
                raise CodecError(_HOLDS_ITSELF)
            if tag == "t":
                value: Any = tuple(values)
            else:
                if self.guarded:
                    self._check_keys(values)
                value = set(values) if tag == "s" else frozenset(values)
            made[index] = value
            if self._fills:
                for container, place in self._fills.pop(index, ()):
                    container[place] = value
            return value
        if tag == "g":
            return decode_table(self, payload)
        handle = self.handles.get(tag)
        if handle is None:
            raise CodecError(f"A frame held a handle {tag!r} that this side does not take.")
        return handle(payload)

    def _note(self, container: Any, places: Any) -> None:
        """Where the stand-ins handed to ``container`` went, to be filled in later. They are
        the last ones open (those handed to a container within it were noted by it)."""
        found = 0
        for place, item in places:
            if type(item) is _Later:
                self._fills.setdefault(item.index, []).append((container, place))
                found += 1
        if found:
            del self._open[-found:]

    def _check_keys(self, keys: list[Any]) -> None:
        """Refuse keys whose hashing would walk too far or that collide on purpose."""
        hashes: dict[int, int] = {}
        for key in keys:
            kind = type(key)
            if kind is str:
                continue  # string hashes are seeded: no chosen collisions
            if kind is tuple or kind is int:
                self.budget -= self._cost(key) if kind is tuple else _digits(key)
                if self.budget < 0:
                    raise CodecError("Keys of a set or dict are too costly to hash in the host.")
            h = hash(key)
            n = hashes.get(h, 0) + 1
            if n > MAX_COLLISIONS:
                raise CodecError("Keys of a set or dict collide in hash; they cannot cross.")
            hashes[h] = n

    def _cost(self, value: tuple[Any, ...]) -> int:
        """Nodes ``hash`` walks in a tuple (shared parts counted each time, from a memo), an
        int counted by its digits; walked in a loop, and stopped past the budget (the caller
        then refuses). A tuple of tuples nested past ``HASH_DEPTH`` is refused: CPython hashes
        it by recursing in C, with no check, and the host's threads have ordinary stacks."""
        costs = self._costs
        known = costs.get(id(value))
        if known is not None:
            return known[0]
        budget = self.budget
        walk: list[list[Any]] = [[value, iter(value), 1, 1]]  # tuple, rest, cost, height
        while True:
            top = walk[-1]
            for item in top[1]:
                kind = type(item)
                if kind is tuple:
                    known = costs.get(id(item))
                    if known is None:
                        if len(walk) >= HASH_DEPTH:
                            raise CodecError(_TOO_DEEP_TO_HASH)
                        walk.append([item, iter(item), 1, 1])
                        break
                    top[2] += known[0]
                    top[3] = max(top[3], known[1] + 1)
                else:
                    top[2] += _digits(item) if kind is int else 1
                if top[2] > budget:
                    return int(top[2])
            else:
                walk.pop()
                if top[3] + len(walk) > HASH_DEPTH:
                    raise CodecError(_TOO_DEEP_TO_HASH)
                costs[id(top[0])] = (top[2], top[3])
                if not walk:
                    return int(top[2])
                walk[-1][2] += top[2]
                walk[-1][3] = max(walk[-1][3], top[3] + 1)
                if walk[-1][2] > budget:
                    return int(walk[-1][2])


def _digits(value: int) -> int:
    """What hashing an int walks: its 30-bit digits (1 for an int of 64 bits)."""
    return 1 + value.bit_length() // 30


_NOT_FINITE = frozenset({"nan", "inf", "-inf"})


class _Later:
    """The place of a tuple met again inside itself, until the tuple is made."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def adapt_plain(value: Any) -> Any:
    """Objects that are plain data in disguise, as the sandbox's ``thaw`` treats them:
    pydantic models, dataclasses, and subclasses of dict, list and tuple."""
    import dataclasses

    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return _plain_subclass(value)
