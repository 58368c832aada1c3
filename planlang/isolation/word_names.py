"""Argument errors of an isolated host word, named as the plan knows the word.

In one process a host word with a plain signature is wrapped by a function of that signature,
named as the plan calls it (``sandbox.host_words``): ``w(1)`` fails with "w() missing 1
required positional argument", and an ``_``-named keyword with "w() got an unexpected keyword
argument". Under process isolation the host calls the function itself, so the same mistake
named the function ("plain() missing ..."). The host gives the plan the message it would get
in one process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from planlang.sandbox.host_words import _GENERIC, _passing

__all__ = ["named_like_the_wrapper", "plain_signature"]


def plain_signature(fn: Callable[..., Any]) -> bool:
    """True when the in-process wrapper has ``fn``'s own signature (no ``*args``, no
    ``**kwargs``, no ``_``-named parameter): then binding refuses what the wrapper refuses."""
    return _passing(fn)[0] != _GENERIC


def named_like_the_wrapper(error: TypeError, fn: Callable[..., Any], name: str) -> TypeError:
    """``error`` as the plan's wrapper named ``name`` would have raised it, when it is an
    error of binding the arguments (raised before ``fn``'s body ran: no frame of it in the
    traceback, whose first entry is the caller's); else ``error`` itself."""
    trace = error.__traceback__
    own = getattr(fn, "__name__", None)
    if trace is None or trace.tb_next is not None or not own:
        return error
    text = str(error)
    if not text.startswith(f"{own}()"):
        return error
    return TypeError(f"{name}(){text[len(own) + 2 :]}")
