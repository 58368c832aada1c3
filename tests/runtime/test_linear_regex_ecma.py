"""``runtime.linear_regex`` reads a pattern as ECMA-262 (JSON Schema's) does: classes and their
escapes, ``\\s``/``\\S`` in a class and out of one, ranges over the surrogates, a lone
surrogate as the code point it is, ``[\\b]`` and ``\\cX``. Where ECMA and Python's ``re`` agree
(classes of literals and ranges, ``\\d``/``\\w`` in ASCII, one code point each), the two are
compared on drawn patterns and texts, lone surrogates included."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.linear_regex import PatternError, compiled, fullmatch, search

# ECMA-262's WhiteSpace and LineTerminator: what \s is, in a class or out of one
ECMA_SPACE = frozenset("\t\n\v\f\r \xa0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff") | {
    chr(c) for c in range(0x2000, 0x200B)
}
# what Python's str.isspace (and re's \s) takes that ECMA's \s does not, and the reverse
NOT_ECMA_SPACE = ["\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\u200b", "a", "_", "0"]
SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff", "\ud900"]
ODD = ["\U0001f600", "\U0010f800", "\U0010ffff", "\uffff", "\ud7ff", "\ue000", "\x00"]
POOL = sorted(ECMA_SPACE) + NOT_ECMA_SPACE + SURROGATES + ODD + ["A", "z", "-", "9", "\x08"]


def ecma_word(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch == "_")


def ecma_digit(ch: str) -> bool:
    return "0" <= ch <= "9"


ESCAPES = {
    "\\s": lambda ch: ch in ECMA_SPACE,
    "\\S": lambda ch: ch not in ECMA_SPACE,
    "\\d": ecma_digit,
    "\\D": lambda ch: not ecma_digit(ch),
    "\\w": ecma_word,
    "\\W": lambda ch: not ecma_word(ch),
}


@pytest.mark.parametrize("escape", sorted(ESCAPES))
@pytest.mark.parametrize("ch", POOL)
def test_a_class_escape_means_the_same_in_a_class_and_out_of_one(escape: str, ch: str) -> None:
    """``\\S`` is ECMA's non-white-space wherever it stands: alone, in ``[\\S]``, beside other
    members (``[\\Sa]``, ``[a\\S]``) and negated (``[^\\S]`` is ``\\s``); so are the others."""
    member = ESCAPES[escape](ch)
    assert fullmatch(escape, ch) is member
    assert fullmatch(f"[{escape}]", ch) is member
    assert fullmatch(f"[^{escape}]", ch) is not member
    assert fullmatch(f"[{escape}\\x00]", ch) is (member or ch == "\x00")
    assert fullmatch(f"[\\x00{escape}]", ch) is (member or ch == "\x00")
    assert fullmatch(f"[^\\x00{escape}]", ch) is not (member or ch == "\x00")


@pytest.mark.parametrize("ch", POOL)
def test_two_escapes_in_one_class_are_their_union(ch: str) -> None:
    assert fullmatch(r"[\S\s]", ch) and not fullmatch(r"[^\S\s]", ch)
    assert fullmatch(r"[\S\d]", ch) is (ch not in ECMA_SPACE)
    assert fullmatch(r"[\s\d]", ch) is (ch in ECMA_SPACE or ecma_digit(ch))
    assert fullmatch(r"[^\s\w]", ch) is not (ch in ECMA_SPACE or ecma_word(ch))


@pytest.mark.parametrize("lone", SURROGATES)
def test_a_lone_surrogate_is_only_itself(lone: str) -> None:
    """Not the plane-16 private-use character it once stood for, in a pattern or a text; a
    negated class, ``.`` and ``\\P{L}`` take it as one character, as ECMA does."""
    private = chr(ord(lone) - 0xD800 + 0x10F800)
    escaped = f"\\u{ord(lone):04X}"
    for pattern in (escaped, lone, f"[{escaped}]", f"[{lone}]"):
        assert fullmatch(pattern, lone) and not fullmatch(pattern, private), pattern
    for pattern in (f"\\u{{{ord(private):X}}}", private, f"[{private}]"):
        assert fullmatch(pattern, private) and not fullmatch(pattern, lone), pattern
    assert not fullmatch(r"[\u{10F800}-\u{10FFFF}]", lone)
    assert not fullmatch(r"[\uD800-\uDFFF]", private)
    for pattern in (".", "[^a]", r"\P{L}", r"\S", r"\D", r"[^]", r"[\s\S]"):
        assert fullmatch(pattern, lone), pattern
    for pattern in ("[]", r"\p{L}", r"\s", "a", r"[\x00-\uD7FF\uE000-\u{10FFFF}]"):
        assert not fullmatch(pattern, lone), pattern
    assert fullmatch("a.b", f"a{lone}b") and search(escaped, f"x{lone}y")


@pytest.mark.parametrize(
    ("pattern", "inside", "outside"),
    [(r"[\uD000-\uDFFF]", ["\ud000", "\ud7ff", "\ud800", "\udfff"], ["\U0001f600", "\ue000"]),
     (r"[\u0041-\uDBFF]", ["A", "\ud7ff", "\udbff"], ["\U0001f600", "\udc00", "\uffff"]),
     (r"[\uD7FF-\uE000]", ["\ud7ff", "\ud900", "\ue000"], ["\ue001", "\U0001f600"]),
     (r"[\uD800-\uFFFF]", ["\ud800", "\uffff", "\ue000"], ["\ud7ff", "\U00010000"]),
     (r"[\uDC00-\u{10FFFF}]", ["\udc00", "\U0001f600", "\U0010ffff"], ["\udbff", "A"]),
     (r"[^\uD800-\uDFFF]", ["A", "\U0001f600", "\ud7ff"], ["\ud800", "\udfff"]),
     (r"[\uD83D\uDE00-\uD83D\uDE4F]", ["\U0001f600", "\U0001f64f"], ["\ud83d", "\ude00"])],
)  # fmt: skip
def test_a_range_holds_what_lies_between_its_ends(
    pattern: str, inside: list[str], outside: list[str]
) -> None:
    """Code points from one end to the other, surrogates among them: an astral character is
    one code point, never the surrogates of its pair (a pair of escapes is that one)."""
    for ch in inside:
        assert fullmatch(pattern, ch), (pattern, ch)
    for ch in outside:
        assert not fullmatch(pattern, ch), (pattern, ch)


def test_surrogates_side_by_side_in_a_text_are_two() -> None:
    """A text is code points (``result_json`` writes each lone one as U+FFFD); a pattern's
    escaped pair ``\\uD83D\\uDE00`` is the one emoji."""
    assert fullmatch("..", "\ud83d\ude00") and not fullmatch(".", "\ud83d\ude00")
    assert fullmatch(r"\uD83D\uDE00", "\U0001f600")
    assert not fullmatch(r"\uD83D\uDE00", "\ud83d\ude00")
    assert fullmatch(r"\uD83D\uD83D", "\ud83d\ud83d")  # two high ones make no pair


@pytest.mark.parametrize(
    ("pattern", "text"),
    [(r"[\b]", "\x08"), (r"[a\b]", "\x08"), (r"[\x00-\b]", "\x05"), (r"[^\b]", "b"),
     (r"a\cJb", "a\nb"), (r"\cj", "\n"), (r"\cA\cZ\ca", "\x01\x1a\x01"), (r"[\cA-\cZ]", "\x0c"),
     (r"[^\cJ]", "J"), (r"\x41\u0042\u{43}", "ABC"), (r"\0", "\x00"), (r"\t\n\v\f\r", "\t\n\v\f\r"),
     (r"[\t-\r]", "\v"), (r"\.\*\+\?\(\)\[\]\{\}\|\/\\\^\$", ".*+?()[]{}|/\\^$"),
     (r"[\]\[\\^-]+", "][\\^-"), (r"[\w-.]+", "a-b.c"), (r"[.-\w]+", "a-b.c"), (r"[a-]", "-"),
     (r"[-a]", "-"), (r"[a-c-e]", "-"), (r"[[:alpha:]]", ":]"), (r"\Q\E", "QE")],
)  # fmt: skip
def test_ecma_escapes_and_class_syntax_match(pattern: str, text: str) -> None:
    assert fullmatch(pattern, text), pattern


@pytest.mark.parametrize(
    ("pattern", "text"),
    [(r"\bcat\b", "a cat"), (r"\Bat", "cat")],
)
def test_outside_a_class_b_is_still_a_word_boundary(pattern: str, text: str) -> None:
    assert search(pattern, text) and not fullmatch(r"\b", "\x08")


@pytest.mark.parametrize(
    "pattern",
    ["[z-a]", "[\\w", "[", "\\c1", "\\u12", "\\x{110000}", "(a)\\1", "[\\uE000-\\uD800]", "a\\"],
)
def test_what_ecma_refuses_is_still_a_pattern_error(pattern: str) -> None:
    with pytest.raises(PatternError):
        compiled(pattern)


# ---- drawn: ECMA (through RE2) against Python's re where the two agree --------------------

POINTS = st.one_of(
    st.integers(0x20, 0x7E),
    st.sampled_from([0x00, 0x08, 0x0A, 0xA0, 0x2028, 0xD7FF, 0xD800, 0xDBFF, 0xDC00, 0xDFFF,
                     0xE000, 0xFFFF, 0x10000, 0x1F600, 0x10F800, 0x10FFFF]),
    st.integers(0x80, 0x10FFFF),
)  # fmt: skip


def escaped(point: int) -> str:
    """A code point as both ECMA and Python write it in a pattern."""
    if point < 0x100:
        return f"\\x{point:02x}"
    if point < 0x10000:
        return f"\\u{point:04x}"
    return chr(point)


@st.composite
def members(draw: st.DrawFn) -> tuple[str, str]:
    """A class member: (ECMA's text, Python's)."""
    kind = draw(st.sampled_from(["one", "range", "set", "control", "backspace"]))
    if kind == "one":
        text = escaped(draw(POINTS))
        return text, text
    if kind == "range":
        a, b = sorted((draw(POINTS), draw(POINTS)))
        text = f"{escaped(a)}-{escaped(b)}"
        return text, text
    if kind == "set":
        text = draw(st.sampled_from([r"\d", r"\D", r"\w", r"\W"]))
        return text, text
    if kind == "control":
        letter = draw(st.sampled_from("AaJjMmZz"))
        return f"\\c{letter}", f"\\x{ord(letter) % 32:02x}"
    return r"\b", r"\b"


@st.composite
def classes(draw: st.DrawFn) -> tuple[str, str]:
    parts = draw(st.lists(members(), min_size=1, max_size=4))
    negated = "^" if draw(st.booleans()) else ""
    ours = "".join(p[0] for p in parts)
    theirs = "".join(p[1] for p in parts)
    return f"[{negated}{ours}]", f"[{negated}{theirs}]"


# a high surrogate's escape followed by a low one's is, to ECMA, the pair's one character
PAIRED = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}")


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.one_of(classes(), POINTS.map(lambda p: (escaped(p), escaped(p)))),
             min_size=1, max_size=3),
    st.lists(st.one_of(POINTS.map(chr), st.sampled_from(POOL)), min_size=0, max_size=3),
)  # fmt: skip
def test_classes_and_escapes_match_as_pythons_re_reads_them(
    atoms: list[tuple[str, str]], text: list[str]
) -> None:
    """Python's ``re`` (ASCII ``\\d`` and ``\\w``, as ECMA's) reads a text as code points, a
    lone surrogate one of them, as ECMA's ``u`` patterns do: on classes of literals, ranges
    (over the surrogates too), ``\\cX`` and ``[\\b]``, the two agree."""
    ours = "".join(a[0] for a in atoms)
    theirs = "".join(a[1] for a in atoms)
    if PAIRED.search(ours):
        return
    joined = "".join(text)
    expected = re.fullmatch(theirs, joined, re.ASCII) is not None
    assert fullmatch(ours, joined) is expected, (ours, joined)
    assert search(ours, joined) is (re.search(theirs, joined, re.ASCII) is not None)
