"""Regular expressions from untrusted text, matched in time linear in the text (RE2).

Python's ``re`` backtracks: ``^(a+)+b$`` against 30 letters is 2**30 steps in C with the
interpreter's lock held, during which no thread of the host runs (its wall clock, and the
killing of a plan's process, included). A plan writes its schemas' patterns and a model
writes the text they meet, so both are an adversary's; RE2 (``google-re2``) matches any
pattern it compiles in time linear in the text. It compiles what JSON Schema recommends
patterns use (ECMA-262's common part: classes, ``\\p{...}``, groups, alternation, the
quantifiers, anchors) and refuses backreferences and lookaround, which no linear-time engine
matches: such a pattern is a ``PatternError`` with why. As in ECMA-262, ``$`` ends the text
(Python's also matched before a last newline), ``\\d`` is the ASCII digits and ``\\u0041``
is ``A``.
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import re2

__all__ = ["SEARCH_MOST", "WATCHED_COST", "MatchTooCostly", "PatternError", "compiled", "fullmatch",
           "program_size", "search", "watching"]  # fmt: skip

# RE2 gives up on a pattern whose program would pass this (``a{1000}{1000}``, say): a
# ``PatternError``. Its default is 8 MiB; each of the cached patterns below may hold it.
MAX_MEMORY = 1 << 20
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # its refusals are told by ``PatternError``, not on stderr
_OPTIONS.max_mem = MAX_MEMORY


class PatternError(ValueError):
    """A pattern RE2 does not compile: a backreference, a lookaround, or not a pattern."""


# RE2 is linear in the text, but a search that leaves its DFA (a pattern of many states, such
# as ``(a|e)[a-z ]{1000}z``) runs its NFA, about 4 ns a character for each instruction of the
# pattern's program here: 35 s for a million characters against four such alternatives (red
# team 18), in C, the interpreter's lock held. A search whose text length times its program
# size passes this (about a second at that rate) is refused, never run.
SEARCH_MOST = 250_000_000


class MatchTooCostly(ValueError):
    """A search the pattern's program size times the text's length makes too costly to run."""


# A search costlier than this (about 4 ms at RE2's slowest) is told to the thread's watcher
# first: many searches each within SEARCH_MOST still add up (40 of a second each).
WATCHED_COST = 1_000_000


class _Watcher(threading.local):
    told: Callable[[int], None] | None = None  # a class default: unset on a new thread


_WATCHER = _Watcher()


@contextlib.contextmanager
def watching(told: Callable[[int], None]) -> Iterator[None]:
    """Within: ``told(cost)`` before each search on this thread costlier than
    ``WATCHED_COST`` (text length times program size); it may raise to stop the search."""
    previous, _WATCHER.told = _WATCHER.told, told
    try:
        yield
    finally:
        _WATCHER.told = previous


# ECMA-262's ``\uXXXX`` (JSON Schema's patterns are ECMA's), which RE2 writes ``\x{XXXX}``;
# an escaped backslash before a ``u`` is taken as the pair it is, so ``\\u0041`` stays.
_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|.)", re.S)


def _as_re2(pattern: str) -> str:
    if "\\u" not in pattern:
        return pattern
    return _ESCAPE.sub(lambda m: f"\\x{{{m.group(1)}}}" if m.group(1) else m.group(0), pattern)


@functools.lru_cache(maxsize=256)
def compiled(pattern: str) -> Any:
    """The pattern compiled once (a plan asks the same few many times)."""
    try:
        return re2.compile(_as_re2(pattern), _OPTIONS)
    except UnicodeEncodeError:
        raise PatternError(f"the pattern {pattern!r} holds a lone surrogate") from None
    except re2.error as error:
        why = error.args[0] if error.args else "not a pattern"
        if isinstance(why, bytes):
            why = why.decode("utf-8", "replace")
        if "too large" in why:  # within RE2's means, but its program past MAX_MEMORY
            raise PatternError(
                f"the pattern {pattern[:200]!r} compiles to a program too large for RE2 "
                f"(over {MAX_MEMORY:,} bytes; a counted repetition of a wide class, such as "
                "\\p{L}{1,200}, is one copy of the class per count)"
            ) from None
        raise PatternError(
            f"the pattern {pattern!r} is not one that matches in linear time ({why}); "
            "backreferences and lookaround are not supported"
        ) from None


def search(pattern: str, text: str) -> bool:
    """Whether the pattern matches somewhere in the text (JSON Schema's ``pattern``);
    ``MatchTooCostly`` for a search past ``SEARCH_MOST``."""
    return _bounded(pattern, text).search(_encodable(text)) is not None


def fullmatch(pattern: str, text: str) -> bool:
    """Whether the pattern matches the whole text (``MatchTooCostly`` as ``search``)."""
    return _bounded(pattern, text).fullmatch(_encodable(text)) is not None


def program_size(pattern: str) -> int:
    """Instructions of the pattern's RE2 program: a search's cost per character, at worst."""
    return int(compiled(pattern).programsize)


def _bounded(pattern: str, text: str) -> Any:
    regex = compiled(pattern)
    cost = len(text) * regex.programsize
    if cost > WATCHED_COST:
        told = _WATCHER.told
        if told is not None:
            told(cost)
    if cost > SEARCH_MOST:
        raise MatchTooCostly(
            f"a text of {len(text):,} characters is too long to match against the pattern "
            f"{pattern[:80]!r} in time (its program has {regex.programsize:,} instructions; "
            f"the two multiplied may be at most {SEARCH_MOST:,})"
        )
    return regex


_SURROGATE = re.compile("[\ud800-\udfff]")  # one class: no backtracking


def _encodable(text: str) -> str:
    """RE2 reads UTF-8: a lone surrogate (JSON's ``"\\ud800"`` decodes to one) is matched
    as the replacement character, one for one, so the text keeps its length."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text
