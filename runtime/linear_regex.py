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


# ECMA-262's own meanings (JSON Schema's patterns are ECMA's) written as RE2 reads them:
# ``\uXXXX`` is ``\x{XXXX}`` (a surrogate pair the character it makes); ``\s`` is ECMA's white
# space and line ends, not RE2's six ASCII ones (``\S`` outside a class its complement); ``.``
# is anything but a line end (RE2's matched ``\r``, U+2028 and U+2029). A lone surrogate, in a
# pattern or a text, stands for a code point of plane 16's private use area, the same on both
# sides (RE2 reads UTF-8, which has none); an escaped backslash stays the pair it is.
_SPACE = (r"\t\n\x{0B}\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}"
          r"\x{3000}\x{FEFF}")  # fmt: skip
_DOT = r"[^\n\r\x{2028}\x{2029}]"
_SURROGATE_SHIFT = 0x10F800 - 0xD800  # U+D800..U+DFFF as U+10F800..U+10FFFF
_HEX = frozenset("0123456789abcdefABCDEF")


def _code(point: int) -> str:
    if 0xD800 <= point <= 0xDFFF:
        point += _SURROGATE_SHIFT
    return f"\\x{{{point:X}}}"


def _unicode_escape(pattern: str, i: int) -> int | None:
    """The code unit of a ``\\uXXXX`` at ``pattern[i]``, or None."""
    digits = pattern[i + 2 : i + 6]
    if pattern[i + 1 : i + 2] == "u" and len(digits) == 4 and _HEX.issuperset(digits):
        return int(digits, 16)
    return None


def _as_re2(pattern: str) -> str:
    """``pattern`` (ECMA-262) as RE2 reads it: one pass, in linear time."""
    out: list[str] = []
    i, n, inside = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            unit = _unicode_escape(pattern, i)
            if unit is not None:
                low = _unicode_escape(pattern, i + 6) if 0xD800 <= unit < 0xDC00 else None
                if low is not None and 0xDC00 <= low <= 0xDFFF:  # a pair: its character
                    out.append(_code(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)))
                    i += 12
                else:
                    out.append(_code(unit))
                    i += 6
                continue
            escaped = pattern[i + 1]
            if escaped in "QE":  # RE2 quotes between them; to ECMA each is its letter
                out.append(escaped)
            elif escaped == "s":
                out.append(_SPACE if inside else f"[{_SPACE}]")
            elif escaped == "S" and not inside:
                out.append(f"[^{_SPACE}]")
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if inside:
            if c == "]":
                inside = False
            out.append("\\[" if c == "[" else c)  # ECMA has no [:alpha:]: a "[" is itself
        elif c == "[":
            negated = pattern[i + 1 : i + 2] == "^"
            after = i + (2 if negated else 1)
            if pattern[after : after + 1] == "]":  # ECMA's [] matches nothing, [^] anything
                out.append(r"[\x00-\x{10FFFF}]" if negated else r"[^\x00-\x{10FFFF}]")
                i = after + 1
                continue
            inside = True
            out.append(pattern[i:after])
            i = after
            continue
        else:
            out.append(_DOT if c == "." else c)
        i += 1
    return _encodable("".join(out))


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
    as its code point in plane 16's private use area, as a pattern names it (``_as_re2``),
    one for one, so the text keeps its length."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(_private, text)
    return text


def _private(m: re.Match[str]) -> str:
    return chr(ord(m.group()) + _SURROGATE_SHIFT)
