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


def written_past(value: Any, most: int) -> bool:
    """Whether ``value`` written out holds more than ``most`` values (a part it holds twice
    counts twice; a part that holds itself, without end). A plan makes a value of 2**30
    values written out from 30 shared lists, which no text of it can hold: this says so in
    time bounded by ``most``, before any text is made."""
    stack, seen = [value], 0
    while stack:
        node = stack.pop()
        seen += 1
        if seen > most:
            return True
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
    return False
