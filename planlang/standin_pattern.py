"""Strings a ``pattern`` matches, made from the pattern's parse tree.

A worker's schema often shapes an ID, a date or a hash (``^[A-Z]{3}-\\d{4}$``); the stand-in
guessed from a few fixed samples and, failing, refused such a plan's price with "no answer can
satisfy the JSON schema". Here the pattern is read by Python's own parser (close to RE2's
syntax for what schemas use) and walked, a repeat count and an alternative drawn at each step.
RE2's search, the check every answer meets, has the last word: a pattern this reads otherwise
than RE2 only costs a candidate, never a wrong answer. What RE2 and JSON Schema (ECMA-262)
write and Python's parser does not read (``\\p{L}``, ``(?<name>...)``, a flag after the start,
``\\z``) is first rewritten to a pattern matching a subset
of the same strings (``_readable``): a subset is enough to build from. ECMA's escaped surrogate
pair (``\\uD83D\\uDE00``) is the one character it makes (U+1F600), as the check reads it.
"""

from __future__ import annotations

import importlib
import random
import re
import string
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from planlang.standin_size import tick

# the parser ``re`` itself uses (3.11+); typeshed has no stubs for these private modules
_c: Any = importlib.import_module("re._constants")
_parser: Any = importlib.import_module("re._parser")

__all__ = ["pattern_candidates"]

_LONGEST = 100_000  # characters a candidate may hold when the schema sets no maxLength
_STEPS = 100_000  # nodes one walk may visit: ``(){1000000}`` grows nothing but costs
_PLAIN = string.ascii_letters + string.digits + " -_.:/#@"  # what a negated class draws from
_CATEGORY = {
    _c.CATEGORY_DIGIT: string.digits,
    _c.CATEGORY_NOT_DIGIT: string.ascii_letters,
    _c.CATEGORY_SPACE: " ",
    _c.CATEGORY_NOT_SPACE: string.ascii_letters + string.digits,
    _c.CATEGORY_WORD: string.ascii_letters + string.digits + "_",
    _c.CATEGORY_NOT_WORD: " -.",
}
_IS = {
    _c.CATEGORY_DIGIT: str.isdigit,
    _c.CATEGORY_NOT_DIGIT: lambda ch: not ch.isdigit(),
    _c.CATEGORY_SPACE: str.isspace,
    _c.CATEGORY_NOT_SPACE: lambda ch: not ch.isspace(),
    _c.CATEGORY_WORD: lambda ch: ch.isalnum() or ch == "_",
    _c.CATEGORY_NOT_WORD: lambda ch: not (ch.isalnum() or ch == "_"),
}


class _Stop(Exception):
    """This walk cannot go on: a construct RE2 has not (a backreference, a lookaround), or the
    candidate grew past its bound."""


def pattern_candidates(pattern: str, rng: random.Random, low: int,
                       high: int | None, tries: int = 8) -> Iterator[str]:  # fmt: skip
    """Up to ``tries`` strings (and padded forms of the short ones) built to match ``pattern``
    with ``low`` to ``high`` characters (``high`` None: the schema sets no maxLength): the
    first with every repeat at its least, the others drawn. None for a pattern Python's parser
    cannot read. The caller searches each with RE2."""
    tree = _parsed(pattern)
    if tree is None:
        return
    longest = max(low, _LONGEST) if high is None else high
    for attempt in range(tries):
        # the least; then every repeat at its most (a minLength met by ``^[a-z]+$``); then drawn
        spread = 0 if attempt == 0 else rng.choice((1, 3, 8, max(low, 1)))
        walk = _Walk(rng, max(low, 1) if attempt == 1 else spread, longest, full=attempt == 1)
        try:
            walk.emit(tree)
        except _Stop:
            continue
        text = "".join(walk.out)
        if low <= len(text) <= longest:
            yield text
        elif len(text) < low and low <= longest:  # an unanchored pattern matches inside more
            yield text + "a" * (low - len(text))
            yield "a" * (low - len(text)) + text


@lru_cache(maxsize=256)
def _parsed(pattern: str) -> Any:
    try:
        return _parser.parse(_readable(pattern))
    except (re.error, RecursionError, OverflowError, ValueError, TypeError):
        return None


# ---- RE2 and ECMA-262 syntax that Python's parser lacks, as Python syntax for a subset

# Unicode classes by their first letter (``\p{Lu}``: upper-case letters), as ASCII members:
# every string built from these is in the class, which is all a candidate needs
_UNICODE = {"L": "A-Za-z", "Lu": "A-Z", "Ll": "a-z", "N": "0-9", "Nd": "0-9", "P": "!-/",
            "Z": " ", "Zs": " ", "S": "$+<=>^`|~", "Sm": "+<=>|~"}  # fmt: skip
_GROUP_NAME = re.compile(r"\(\?<(?=[A-Za-z_])")  # ECMA's and RE2's ``(?<name>``
_FLAGS_GROUP = re.compile(r"\(\?[imsU]*(?:-[imsU]*)?\)")  # ``(?i)``: global in Python
_SCOPED_FLAGS = re.compile(r"\(\?[imsU]*(?:-[imsU]*)?:")  # ``(?i:...)``; RE2's U Python lacks
# ``\uD83D\uDE00``: ECMA's surrogate pair, one character (U+1F600) as RE2's check reads it
_PAIR = r"\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})"
_TOKEN = re.compile(_PAIR + r"|\\([pP])(?:\{([A-Za-z_]+)\}|([A-Za-z]))|\\.|\[\^?\]?|\]", re.S)


def _readable(pattern: str) -> str:
    """``pattern`` as Python's parser reads it, matching a subset of what RE2 matches.

    A flag changes only what else matches (``(?i)``: other cases too; ``(?s)``: a newline
    for a dot), so dropping it keeps a subset; a negated Unicode class (``\\P{L}``) or a
    script (``\\p{Greek}``) is left for the parser to refuse (no candidate, never a wrong one).
    Linear in the pattern's length, as an adversary may write it."""
    pattern = _GROUP_NAME.sub("(?P<", pattern)
    pattern = _FLAGS_GROUP.sub("", pattern)
    pattern = _SCOPED_FLAGS.sub("(?:", pattern)
    pattern = pattern.replace("\\z", "\\Z")

    out: list[str] = []
    inside, negated, at = False, False, 0  # one pass: whether each ``\\p`` is in a class
    for m in _TOKEN.finditer(pattern):
        token = m.group(0)
        if token.startswith("[") and not inside:
            inside, negated = True, token.startswith("[^")
        elif token == "]" and inside:
            inside = False
        elif m.group(1):  # a surrogate pair: the one character it makes, as ``\U...``
            high, low = int(m.group(1), 16), int(m.group(2), 16)
            token = f"\\U{0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00):08X}"
        elif m.group(3):  # a Unicode class; in a negated class its subset would widen it
            name = m.group(4) or m.group(5)
            if m.group(3) == "p" and name in _UNICODE and not (inside and negated):
                members = _UNICODE[name]
                token = members if inside else f"[{members}]"
        out.append(pattern[at : m.start()])
        out.append(token)
        at = m.end()
    out.append(pattern[at:])
    return "".join(out)


class _Walk:
    """One candidate: the parse tree walked once, its characters in ``out``."""

    def __init__(self, rng: random.Random, spread: int, longest: int, full: bool = False):
        self.rng, self.spread, self.longest, self.full = rng, spread, longest, full
        self.out: list[str] = []
        self.size = 0
        self.steps = 0

    def put(self, ch: str) -> None:
        self.size += 1
        if self.size > self.longest:
            raise _Stop
        self.out.append(ch)

    def emit(self, nodes: Any) -> None:
        for op, arg in nodes:
            self.steps += 1
            if self.steps > _STEPS:
                raise _Stop
            tick()  # a walk of many nodes stops when its plan's time is up
            if op is _c.LITERAL:
                self.put(chr(arg))
            elif op is _c.NOT_LITERAL:
                self.put(self._draw(lambda ch, no=arg: ord(ch) != no))
            elif op is _c.ANY:
                self.put(self.rng.choice(string.ascii_letters))
            elif op is _c.IN:
                self.put(self._member(arg))
            elif op is _c.AT:
                continue  # an anchor or a boundary: RE2's search judges it
            elif op is _c.BRANCH:
                choices = arg[1]
                self.emit(choices[0] if not self.spread else self.rng.choice(choices))
            elif op is _c.SUBPATTERN:
                self.emit(arg[-1])
            elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", None)):
                least, most, body = arg
                most = min(most, least + self.spread)
                count = most if self.full else self.rng.randint(least, most)
                for _ in range(count):
                    self.emit(body)
            elif op is getattr(_c, "ATOMIC_GROUP", None):
                self.emit(arg)
            else:  # a backreference, a lookaround, a conditional: RE2 has none
                raise _Stop

    def _member(self, items: list[tuple[Any, Any]]) -> str:
        """A character of a class: one of its items drawn, or one of ``_PLAIN`` outside it."""
        if items and items[0][0] is _c.NEGATE:
            rest = items[1:]
            return self._draw(lambda ch: not any(_holds(item, ch) for item in rest))
        op, arg = self.rng.choice(items)
        if op is _c.LITERAL:
            return chr(arg)
        if op is _c.RANGE:
            first, last = arg
            plain = [ch for ch in _PLAIN if first <= ord(ch) <= last]
            return self.rng.choice(plain) if plain else chr(self.rng.randint(first, last))
        if op is _c.CATEGORY and arg in _CATEGORY:
            return self.rng.choice(_CATEGORY[arg])
        raise _Stop

    def _draw(self, allowed: Any) -> str:
        plain = [ch for ch in _PLAIN if allowed(ch)]
        if not plain:
            raise _Stop
        return self.rng.choice(plain)


def _holds(item: tuple[Any, Any], ch: str) -> bool:
    op, arg = item
    if op is _c.LITERAL:
        return ch == chr(arg)
    if op is _c.RANGE:
        return arg[0] <= ord(ch) <= arg[1]
    if op is _c.CATEGORY:
        return arg in _IS and _IS[arg](ch)
    return True  # an item not read here: no character is taken for outside it
