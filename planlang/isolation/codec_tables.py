"""Values nested deep, as a table of their containers: ``{"g": nodes}``, children as
``{"r": n}`` (``codec``'s header).

The codec's tree recurses a frame a level; past ``codec.TABLE_DEPTH`` levels a value goes as a
flat table, written and read in loops, so a list nested 100,000 deep crosses as JSON nested three
levels and the parsers' depth limits never apply. The host reads a table in work linear in its
items: references checked in range, every node referred to, tuples and sets made after what
they hold (one holding itself other than through a list or dict is refused), keys checked as
the tree's are.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from planlang.isolation.codec_common import (
    _CONTAINERS,
    _FUNCTION,
    _HOLDS_ITSELF,
    _PENDING,
    CodecError,
)

if TYPE_CHECKING:
    from planlang.isolation.codec import Decoder, Encoder

__all__ = ["decode_table", "encode_table"]

_NODE_TAGS = frozenset({"d", "t", "s", "f"})
_BAD_TABLE = "A frame held a malformed table of containers."


class _Ref:
    """A table's reference to the container of that number, until the containers are made."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def encode_table(encoder: Encoder, root: Any) -> Any:
    """A container not met before, and all it holds, as ``{"g": nodes}`` (the module's
    header): a walk in a loop, numbering containers in the order the tree's recursion
    would (each met first is numbered, then walked, before the next item)."""
    nodes: list[Any] = []
    stack: list[tuple[list[Any], Any]] = []
    _open(encoder, root, type(root), nodes, stack)
    memo, handle, adapt = encoder.memo, encoder.handle, encoder.adapt
    while stack:
        out, parts = stack[-1]
        for part in parts:
            kind = type(part)
            if kind is str or kind is bool or part is None:
                out.append(part)
                continue
            if kind is float or kind is int or kind is _FUNCTION:
                out.append(encoder.encode(part))  # a scalar, a tagged number, a handle
                continue
            seen = memo.get(id(part))
            if seen is not None:
                out.append({"r": seen[1]})
                continue
            if kind in _CONTAINERS:
                out.append({"r": encoder.count})
                _open(encoder, part, kind, nodes, stack)
                break
            plain = adapt(part) if adapt is not None else None
            if plain is None:
                out.append(handle(part))
                continue
            if type(plain) in _CONTAINERS and id(plain) not in memo:
                out.append({"r": encoder.count})  # the original shares its copy's number
                memo[id(part)] = (part, encoder.count)
                _open(encoder, plain, type(plain), nodes, stack)
                break
            out.append(encoder.encode(plain))  # a scalar, a handle, or met before: shallow
        else:
            stack.pop()
    return {"g": nodes}


def _open(encoder: Encoder, container: Any, kind: type, nodes: list[Any],
      stack: list[tuple[list[Any], Any]]) -> None:  # fmt: skip
    """Number a container of a table, add its node, and walk it next."""
    encoder.memo[id(container)] = (container, encoder.count)
    encoder.count += 1
    out: list[Any] = []
    if kind is list:
        nodes.append(out)
        stack.append((out, iter(container)))
    elif kind is dict:
        nodes.append({"d": out})
        stack.append((out, itertools.chain.from_iterable(container.items())))
    else:
        nodes.append({"t" if kind is tuple else "s" if kind is set else "f": out})
        stack.append((out, iter(container)))


def decode_table(decoder: Decoder, nodes: Any) -> Any:
    """A table (``{"g": nodes}``, the module's header) into its containers, in loops: one
    pass over its items, each a scalar, a leaf (a tagged number, a handle) or a reference;
    then its tuples, sets and frozensets, each after those it holds (a walk of the
    references between them, which must end: one that holds itself other than through a
    list or dict is refused); then its lists and dicts, made empty at first, filled.
    The work is linear in the table's items; its keys are checked as the tree's are."""
    if type(nodes) is not list or not nodes:
        raise CodecError(_BAD_TABLE)
    decoder.tables = True
    made = decoder.made
    first = len(made)
    end = first + len(nodes)
    tags: list[str] = []
    parts: list[list[Any]] = []  # each node's items, references as _Ref
    for node in nodes:
        if type(node) is list:
            tag, items = "l", node
        elif type(node) is dict and len(node) == 1:
            ((tag, items),) = node.items()
            if tag not in _NODE_TAGS or type(items) is not list or (
                tag == "d" and len(items) % 2
            ):  # fmt: skip
                raise CodecError(_BAD_TABLE)
        else:
            raise CodecError(_BAD_TABLE)
        tags.append(tag)
        parts.append(items)
        made.append([] if tag == "l" else {} if tag == "d" else _PENDING)
    referred = [0] * len(nodes)
    decode = decoder.decode
    for n, items in enumerate(parts):
        resolved: list[Any] = []
        for item in items:
            kind = type(item)
            if kind is str or kind is int or kind is bool or item is None or kind is float:
                resolved.append(item)
                continue
            if kind is not dict or len(item) != 1:
                raise CodecError(_BAD_TABLE)
            ((tag, payload),) = item.items()
            if tag == "r":
                if type(payload) is not int or not 0 <= payload < end:
                    raise CodecError("A frame referred to a value it had not sent.")
                if payload >= first:
                    referred[payload - first] += 1
                else:
                    decoder.shared = True
                resolved.append(_Ref(payload))
            elif tag in _NODE_TAGS or tag == "g":  # a container not as a reference
                raise CodecError(_BAD_TABLE)
            else:
                resolved.append(decode(item))  # a tagged number or a handle: no nesting
        parts[n] = resolved
    if referred[0] or any(count != 1 for count in itertools.islice(referred, 1, None)):
        if not all(referred[1:]):  # a node nothing refers to: never sent so
            raise CodecError(_BAD_TABLE)
        decoder.shared = True
    # tuples, sets and frozensets, each once those it holds are made
    state = bytearray(len(nodes))  # 0: not yet, 1: being made (on the walk), 2: made
    for start, tag in enumerate(tags):
        if tag == "l" or tag == "d" or state[start]:
            continue
        walk = [(start, iter(parts[start]))]
        state[start] = 1
        while walk:
            n, rest = walk[-1]
            for part in rest:
                if type(part) is not _Ref:
                    continue
                at = part.index - first
                if at < 0:
                    if made[part.index] is _PENDING:  # a tuple of the tree, around this
                        raise CodecError(_HOLDS_ITSELF)
                    continue
                if tags[at] == "l" or tags[at] == "d" or state[at] == 2:
                    continue
                if state[at] == 1:
                    raise CodecError(_HOLDS_ITSELF)
                state[at] = 1
                walk.append((at, iter(parts[at])))
                break
            else:
                walk.pop()
                values = [made[p.index] if type(p) is _Ref else p for p in parts[n]]
                if tags[n] == "t":
                    value: Any = tuple(values)
                else:
                    if decoder.guarded:
                        decoder._check_keys(values)
                    value = set(values) if tags[n] == "s" else frozenset(values)
                made[first + n] = value
                state[n] = 2
    # lists and dicts, filled
    fills = decoder._fills
    for n, tag in enumerate(tags):
        if tag != "l" and tag != "d":
            continue
        container = made[first + n]
        values = []
        for place, p in enumerate(parts[n]):
            if type(p) is not _Ref:
                values.append(p)
                continue
            found = made[p.index]
            if found is _PENDING:  # a tuple of the tree around this one: put in, once made
                if tag == "d" and not place % 2:
                    raise CodecError(_HOLDS_ITSELF)
                fills.setdefault(p.index, []).append(
                    (container, place if tag == "l" else values[place - 1])
                )
            values.append(found)
        if tag == "l":
            container.extend(values)
            continue
        keys = values[0::2]
        if decoder.guarded:
            decoder._check_keys(keys)
        container.update(zip(keys, values[1::2], strict=True))
    return made[first]
