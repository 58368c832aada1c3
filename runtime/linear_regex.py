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
import threading
from collections.abc import Callable, Iterable, Iterator
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
# ``\uXXXX`` (and ``\u{X...}``, ``\xHH``, ``\cX``, ``\t`` and the like, and ``[\b]``, a
# backspace) is the code point it names, a surrogate pair the character it makes; ``\s`` is
# ECMA's white space and line ends, not RE2's six ASCII ones, and ``\S`` their complement, in
# a class too; ``.`` is anything but a line end (RE2's matched ``\r``, U+2028 and U+2029). A
# class is read to its end, each member written as RE2 reads it (``\x{...}``), so RE2 never
# meets ECMA's own syntax there (``[\b]``, a ``[`` that is itself, a ``-`` beside ``\w``).
#
# A lone surrogate (JSON's ``"\ud800"`` decodes to one) is a code point in ECMA as in a Python
# text; UTF-8 has none, but RE2 compiles U+D800..U+DFFF as the three bytes they would be
# (``ED A0 80``...), which no UTF-8 of real text holds. So a text is handed to RE2 as those
# bytes (``surrogatepass``) and a pattern names the surrogates by code point: a lone surrogate
# matches only itself (never a character of plane 16, which it once stood for), a range over
# them (``[\uD7FF-\uE000]``) holds them, and a negated class or ``.`` matches them.
_SPACES = ((0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
           (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000),
           (0xFEFF, 0xFEFF))  # fmt: skip
_LAST = 0x10FFFF


def _code(point: int) -> str:
    """One code point as RE2 reads it in a class or out of one (``\\x{...}``, or itself)."""
    return chr(point) if chr(point).isascii() and chr(point).isalnum() else f"\\x{{{point:X}}}"


def _ranges(ranges: Iterable[tuple[int, int]]) -> str:
    return "".join(_code(a) if a == b else f"{_code(a)}-{_code(b)}" for a, b in ranges)


def _complement(ranges: tuple[tuple[int, int], ...]) -> Iterator[tuple[int, int]]:
    start = 0
    for a, b in ranges:
        if start < a:
            yield start, a - 1
        start = b + 1
    if start <= _LAST:
        yield start, _LAST


_SPACE = _ranges(_SPACES)  # members of a class: ``\s`` is ``[_SPACE]``
_NOT_SPACE = _ranges(_complement(_SPACES))  # ``\S`` among other members of a class
_DOT = r"[^\n\r\x{2028}\x{2029}]"
_HEX = frozenset("0123456789abcdefABCDEF")
_CONTROLS = {"t": 0x09, "n": 0x0A, "v": 0x0B, "f": 0x0C, "r": 0x0D}
_NAME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")


def _unicode_escape(pattern: str, i: int) -> int | None:
    """The code unit of a ``\\uXXXX`` at ``pattern[i]``, or None."""
    digits = pattern[i + 2 : i + 6]
    if pattern[i + 1 : i + 2] == "u" and len(digits) == 4 and _HEX.issuperset(digits):
        return int(digits, 16)
    return None


def _pair(high: int, low: int | None) -> int | None:
    """The character a surrogate pair makes, or None if these two are not one."""
    if 0xD800 <= high < 0xDC00 and low is not None and 0xDC00 <= low <= 0xDFFF:
        return 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
    return None


def _braced_hex(pattern: str, i: int) -> tuple[int, int] | None:
    """The code point of ``{X...}`` at ``pattern[i]`` (at most U+10FFFF) and where it ends."""
    if pattern[i : i + 1] != "{":
        return None
    end = pattern.find("}", i + 1, i + 10)
    digits = pattern[i + 1 : end]
    if end < 0 or not digits or not _HEX.issuperset(digits) or int(digits, 16) > _LAST:
        return None
    return int(digits, 16), end + 1


def _character(pattern: str, i: int) -> tuple[int, int]:
    """The code point of the (unescaped) character at ``pattern[i]`` and where it ends: a
    text's code point, a surrogate one too (as in the texts it meets, where two of them are
    two, not the character a pair of escapes names)."""
    return ord(pattern[i]), i + 1


def _escape(pattern: str, i: int, inside: bool) -> tuple[int | str, int]:
    """The escape at ``pattern[i]`` (a backslash): its code point, or RE2's text for what it
    is (a set such as ``\\d``, an assertion, or what RE2 is left to refuse), and its end."""
    e = pattern[i + 1]
    if e == "u":
        unit = _unicode_escape(pattern, i)
        if unit is not None:
            joined = _pair(unit, _unicode_escape(pattern, i + 6))
            return (unit, i + 6) if joined is None else (joined, i + 12)
        braced = _braced_hex(pattern, i + 2)  # ``\u{1F600}``
        return braced if braced is not None else (pattern[i : i + 2], i + 2)
    if e == "x":
        digits = pattern[i + 2 : i + 4]
        if len(digits) == 2 and _HEX.issuperset(digits):
            return int(digits, 16), i + 4
        braced = _braced_hex(pattern, i + 2)  # RE2's ``\x{...}``
        return braced if braced is not None else (pattern[i : i + 2], i + 2)
    if e == "c" and pattern[i + 2 : i + 3].isascii() and pattern[i + 2 : i + 3].isalpha():
        return ord(pattern[i + 2]) % 32, i + 3  # ``\cJ`` is control-J, a line feed
    if e in _CONTROLS:
        return _CONTROLS[e], i + 2
    if e == "b" and inside:
        return 0x08, i + 2  # ``[\b]`` is a backspace (outside a class, a word boundary)
    if e == "0" and not pattern[i + 2 : i + 3].isdigit():
        return 0, i + 2
    if e == "s":
        return (_SPACE if inside else f"[{_SPACE}]"), i + 2
    if e == "S":
        return (_NOT_SPACE if inside else f"[^{_SPACE}]"), i + 2
    if e in "pP":  # ``\p{L}``, ``\pL``: RE2's Unicode classes, which it checks
        end = pattern.find("}", i + 3, i + 64) if pattern[i + 2 : i + 3] == "{" else -1
        if end > 0 and _NAME.issuperset(pattern[i + 3 : end]):
            return pattern[i : end + 1], end + 1
        return pattern[i : i + 3], i + 3
    if e in "QE" or not (e.isascii() and e.isalnum()):
        return _character(pattern, i + 1)  # ``\.``, ``\-``, ``\Q``: the character itself
    # ``\d``, ``\w`` and their complements (RE2's are ECMA's, ASCII), ``\b``, ``\B``, ``\z``;
    # RE2 refuses what ECMA has not (``\1``, ``\k<name>``, ``\y``)
    return pattern[i : i + 2], i + 2


def _member(pattern: str, i: int) -> tuple[int | str, int]:
    """One member of a class at ``pattern[i]`` (not its closing ``]``) and where it ends."""
    if pattern[i] == "\\" and i + 1 < len(pattern):
        return _escape(pattern, i, inside=True)
    return _character(pattern, i)  # ECMA has no [:alpha:]: a "[" is itself


def _member_text(member: int | str) -> str:
    return _code(member) if isinstance(member, int) else member


def _class(pattern: str, i: int) -> tuple[str, int]:
    """The class at ``pattern[i]`` (a ``[``) as RE2 reads it, and where it ends."""
    n = len(pattern)
    negated = pattern[i + 1 : i + 2] == "^"
    i += 2 if negated else 1
    if pattern[i : i + 1] == "]":  # ECMA's [] matches nothing, [^] anything
        return (r"[\x00-\x{10FFFF}]" if negated else r"[^\x00-\x{10FFFF}]"), i + 1
    out = ["[^" if negated else "["]
    while i < n and pattern[i] != "]":
        first, i = _member(pattern, i)
        if pattern[i : i + 1] == "-" and i + 1 < n and pattern[i + 1] != "]":
            last, i = _member(pattern, i + 1)
            if isinstance(first, int) and isinstance(last, int):
                out.append(f"{_code(first)}-{_code(last)}")  # RE2 refuses one out of order
            else:  # ``[\w-.]``: beside a set, a "-" is itself (ECMA's Annex B, and RE2's)
                out.append(f"{_member_text(first)}\\-{_member_text(last)}")
        else:
            out.append(_member_text(first))
    if i < n:
        out.append("]")
        i += 1
    return "".join(out), i  # unclosed: RE2 refuses it (missing ])


def _as_re2(pattern: str) -> str:
    """``pattern`` (ECMA-262) as RE2 reads it: one pass, in linear time. It holds no
    surrogate, so it is UTF-8."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            atom, i = _escape(pattern, i, inside=False)
            out.append(_member_text(atom))
        elif c == "[":
            text, i = _class(pattern, i)
            out.append(text)
        elif c == ".":
            out.append(_DOT)
            i += 1
        elif "\ud800" <= c <= "\udfff":
            out.append(_code(ord(c)))
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


@functools.lru_cache(maxsize=256)
def compiled(pattern: str) -> Any:
    """The pattern compiled once (a plan asks the same few many times)."""
    try:
        return re2.compile(_as_re2(pattern).encode("utf-8"), _OPTIONS)
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


def _encodable(text: str) -> bytes:
    """The text as the bytes RE2 reads: its UTF-8, a lone surrogate (JSON's ``"\\ud800"``
    decodes to one) as the three bytes it would be, which a pattern names by code point
    (``_as_re2``) and no real character's UTF-8 holds. Each code point of the text is one
    (two surrogates side by side are two, as ``result_json`` writes them)."""
    return text.encode("utf-8", "surrogatepass")
