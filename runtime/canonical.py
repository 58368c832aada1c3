"""Canonical JSON (sorted keys, no spaces, UTF-8 kept), made once and reused on the hot path.

Every model call serialises its messages for the ledger key and its reply for the ledger row.
``json.dumps(obj, sort_keys=True, ...)`` builds a new encoder object on each call; for the tiny
documents of a call that setup costs more than the encoding itself. This module builds the C
encoder once, with exactly the options of ``json.dumps(obj, sort_keys=True,
separators=(",", ":"), ensure_ascii=False)``, so its output is byte for byte the same (a test
checks it): ledger keys written by earlier versions still match.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable
from itertools import chain
from typing import Any


def _slow(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _fast_encoder() -> Callable[[Any], str] | None:
    # Not in the typing stubs, and None on an interpreter without the C accelerator.
    c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
    encode_basestring = getattr(json.encoder, "c_encode_basestring", None)
    if c_make_encoder is None or encode_basestring is None:
        return None
    default = json.JSONEncoder().default  # raises TypeError for what JSON cannot hold
    # markers=None: no circular-reference bookkeeping (shared state would not be thread-safe);
    # a circular structure still fails, with RecursionError instead of ValueError.
    encode = c_make_encoder(None, default, encode_basestring, None, ":", ",", True, False, True)

    def dumps(obj: Any) -> str:
        return "".join(encode(obj, 0))

    return dumps


dumps: Callable[[Any], str] = _fast_encoder() or _slow


def same_as_dumps(**options: Any) -> Callable[[Any], str]:
    """``json.dumps(obj, **options)`` byte for byte, with its C encoder made once.

    For the JSON a call makes of its own small, plain documents (a schema's text as a cache
    key, the stand-in's seed text). The encoder keeps no circular-reference bookkeeping (half
    its cost on such documents); what then overflows the stack is handed to ``json.dumps``
    itself, so a circular document fails with the very error it always did.
    """
    made = json.JSONEncoder(**{**options, "check_circular": False})
    c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
    if c_make_encoder is None or made.indent is not None:
        return lambda obj: json.dumps(obj, **options)
    quote = json.encoder.c_encode_basestring_ascii if made.ensure_ascii else (
        json.encoder.c_encode_basestring)  # fmt: skip
    encode = c_make_encoder(None, made.default, quote, None, made.key_separator,
                            made.item_separator, made.sort_keys, made.skipkeys,
                            made.allow_nan)  # fmt: skip

    def dumps(obj: Any) -> str:
        if type(obj) is str:
            return quote(obj)  # the C encoder takes only containers and scalars as a whole
        try:
            return "".join(encode(obj, 0))
        except RecursionError:
            return json.dumps(obj, **options)

    return dumps


# What one value written out weighs, beyond its own 1: a text one more for each 16 of its
# characters, an int one more for each 64 of its bits (about 19 digits), a key as its text does.
_TEXT_SHIFT, _INT_SHIFT = 4, 6
DEEPEST = 256  # levels of containers a value written out may nest (the encoder recurses)
_END = object()


def written_past(value: Any, most: int, deepest: int = DEEPEST) -> str | None:
    """Why ``value`` written out is too large, or None: ``"size"`` when it weighs more than
    ``most`` (each value 1, texts and ints more by their length: a part it holds twice counts
    twice, a part that holds itself without end), ``"depth"`` when its containers nest more
    than ``deepest`` levels. A plan makes a value of 2**30 values written out from 30 shared
    lists, or a terabyte of text from one long string held a million times, which no text of
    it can hold: this says so in time bounded by ``most``, before any text is made (a stack of
    iterators: each value is looked at once, however wide its container)."""
    weight = 0
    stack = [iter((value,))]
    while stack:
        node = next(stack[-1], _END)
        if node is _END:
            stack.pop()
            continue
        weight += 1
        if isinstance(node, str):
            weight += len(node) >> _TEXT_SHIFT
        elif isinstance(node, int):
            weight += node.bit_length() >> _INT_SHIFT
        elif isinstance(node, dict):
            if len(stack) > deepest:
                return "depth"
            stack.append(chain.from_iterable(node.items()))  # keys are written out too
        elif isinstance(node, list | tuple):
            if len(stack) > deepest:
                return "depth"
            stack.append(iter(node))
        if weight > most:
            return "size"
    return None


def written_too_large(value: Any, most: int) -> str | None:
    """What is wrong with ``value`` written out (``written_past``), said after its name, or
    None: the one wording of the schema's and the worker's size checks."""
    why = written_past(value, most)
    if why == "depth":
        return f"nests too deeply: more than {DEEPEST} levels"
    if why is not None:
        return (f"is too large: more than {most:,} values written out (a value it holds twice "
                "counts twice, a text one more for each 16 characters)")  # fmt: skip
    return None
