"""Red team 24: what the plan's own text can hold (integer literals), and what the host does
with it before and after the plan runs. Each case fails on the commit it was written against
(939e343) unless marked otherwise. Nothing here measures time except as a hang guard: the
assertions are on the error's kind and the result, which are the contract between the two
modes (``isolation="process"`` and ``"inprocess"``).
"""

from __future__ import annotations

import pytest

from planlang import Limits, PlanError, PlanLimitError, Sandbox

MODES = ("inprocess", "process")


def _run(src: str, mode: str, host: dict | None = None, limits: Limits | None = None) -> object:
    return Sandbox(host=host or {}, limits=limits or Limits(seconds=10), isolation=mode).run(src)


# -- 1. a hex literal past int_max_str_digits: the sandbox's own look at the code raised -------


@pytest.mark.parametrize("mode", MODES)
def test_a_long_hex_literal_inside_int_bits_runs(mode: str) -> None:
    """``x = 0xfff...`` of 20,000 hex digits: 80,000 bits, inside ``Limits.int_bits``
    (100,000), but past CPython's 4,300 decimal digits. Before any plan line ran,
    ``deep_stack.needs_deep_stack`` listed the code's instructions with
    ``dis.get_instructions``, which makes a repr of every constant: ``ValueError: Exceeds the
    limit (4300 digits) for integer string conversion``. In one process that became a
    ``PlanRuntimeError`` for a plan that did nothing wrong; under process isolation the host
    computed it while sending the code (``payload.code_payload``) and the bare ``ValueError``
    left ``Sandbox.run``, which lets nothing but a ``PlanError`` out (docs/SECURITY.md). (A
    host that set ``sys.set_int_max_str_digits(0)`` made the decimal text of a 4-million-bit
    literal instead: quadratic time in the host.) The plan should just run."""
    src = "x = 0x" + "f" * 20_000 + "\nresult = x.bit_length()\n"
    assert _run(src, mode) == 80_000


# -- 2. integer literals are not held to int_bits: a shortcut round every int guard ------------


@pytest.mark.parametrize("mode", MODES)
def test_an_integer_literal_past_int_bits_is_a_size_limit(mode: str) -> None:
    """``int_bits`` bounds every integer a plan makes (``*``, ``**``, ``<<``, ``int(text,
    base)``: the last closed after ``int('f' * 999999, 16)`` then ``//`` ran 12 s, breaches
    #7), but a literal is made by the compiler: ``0x`` and 760,000 hex digits is a 3-million-bit
    int inside the 1 MB source bound, and ``x % y`` of it by a 800,000-bit literal is one C
    call of about 2.6 s (CPython 3.11's division is quadratic). ``for i in range(20): z = x %
    y`` ran 52.7 s in one process on ``Limits(seconds=2)`` (fewer than 256 steps: the clock
    was never read), ending as ``seconds`` only then. A literal past ``int_bits`` should end
    the plan as ``size``, as any other way of making that integer does."""
    src = "x = 0x" + "f" * 1_000 + "\nresult = x % 7\n"  # 4,000 bits
    with pytest.raises(PlanLimitError) as caught:
        _run(src, mode, limits=Limits(seconds=10, int_bits=2_000))
    assert caught.value.kind == "size", caught.value


@pytest.mark.parametrize("mode", MODES)
def test_a_folded_or_nested_literal_past_int_bits_is_a_size_limit(mode: str) -> None:
    """The same literal inside a tuple the compiler folds into one constant, and inside a plan
    function's own code."""
    big = "0x" + "f" * 1_000
    for src in (f"t = ({big}, 1)\nresult = 1\n",
                f"def f():\n    y = {big}\n    return y % 7\nresult = f()\n"):  # fmt: skip
        with pytest.raises(PlanLimitError) as caught:
            _run(src, mode, limits=Limits(seconds=10, int_bits=2_000))
        assert caught.value.kind == "size", (src[:40], caught.value)


def test_a_literal_past_int_bits_ends_the_same_in_both_modes() -> None:
    """With ``Limits(steps=100_000)`` the host's decoder takes ints of at most ``int_bits +
    steps`` (200,000) bits from the plan's process (``handles.Table._int_bits``): a plan makes
    none larger, except by a literal. ``x = 0x`` and 100,000 hex digits (400,000 bits) handed
    to a host word, or as the result: in one process the word got it and the plan answered;
    under process isolation the plan failed with ``TypeError: An integer past the plan's limit
    ... cannot cross``. Same plan, another outcome: both should end as ``size``. (A literal
    now has at most 100,000 bits, PL008: the same holds below it, with ``int_bits`` lower.)"""
    src = "x = 0x" + "f" * 25_000 + "\nresult = echo(x) > 0\n"
    limits = Limits(seconds=10, steps=10_000, int_bits=40_000)
    kinds = []
    for mode in MODES:
        try:
            kinds.append(("ok", _run(src, mode, {"echo": lambda v: v}, limits)))
        except PlanError as error:
            kinds.append((type(error).__name__, getattr(error, "kind", None)))
    assert kinds[0] == kinds[1] == ("PlanLimitError", "size"), kinds


# -- 3. a value nested some hundreds deep crosses in one process, not between two -------------


def test_a_value_nested_600_deep_ends_the_same_in_both_modes() -> None:
    """``x = []`` then ``x = [x]`` 600 times, handed to a host word (and, the same, as the
    result): 600 steps and 600 small lists, far inside every limit. In one process the word
    gets the plan's list and answers 1; under process isolation the plan's process encodes it
    with a list comprehension a level (``codec.Encoder.encode``: two frames each), passes
    Python's recursion limit near 490 levels and the plan ends as ``PlanLimitError("depth")``
    (a result nested 800 deep likewise). Same plan, another outcome. Now the codec writes a
    value past ``codec.TABLE_DEPTH`` levels as a table, read in loops, and the wall copies a
    deep one in a loop: both modes answer 1 (tests/planlang/test_codec_depth.py)."""
    src = "x = []\nfor i in range(600):\n    x = [x]\nresult = echo(x)\n"
    outcomes = []
    for mode in MODES:
        try:
            outcomes.append(("ok", _run(src, mode, {"echo": lambda v: 1})))
        except PlanError as error:
            outcomes.append((type(error).__name__, getattr(error, "kind", None)))
    assert outcomes[0] == outcomes[1] == ("ok", 1), outcomes


# -- 4. a host word's StopIteration: the end of a C loop in one process, an error in two -------


def _first(items: list) -> object:
    return next(iter(items))  # an embedder's word: on no items, its own next() runs off the end


@pytest.mark.parametrize(
    "src",
    [
        "result = list(map(first, [[1], [], [3]]))\n",
        "result = sum(map(first, [[1], []]))\n",
        "result = list(filter(first, [[1], []]))\n",
        "result = max(map(first, [[]]), default=7)\n",
        "it = map(first, [[]])\nresult = next(it, 'none')\n",
    ],
)
def test_a_host_words_stopiteration_fails_the_plan_in_both_modes(src: str) -> None:
    """A host word whose own ``next()`` runs off an end (``first([])``) raises StopIteration.
    In one process it reached the plan's ``map``/``filter`` as itself, and C's iteration took
    it for the end of the items: ``list(map(first, [[1], [], [3]]))`` answered ``[1]``, the
    third item silently gone (``sum`` 1, ``max`` its default, ``next`` its default). Under
    process isolation it crosses as its name, a plain error, and the plan fails (``StopIteration``).
    The same plan must end the same way; the failure is the one that loses nothing."""
    outcomes = []
    for mode in MODES:
        try:
            outcomes.append(("ok", _run(src, mode, {"first": _first})))
        except PlanError as error:
            outcomes.append((type(error).__name__, getattr(error, "error_type", None)))
    assert outcomes[0] == outcomes[1] == ("PlanRuntimeError", "StopIteration"), outcomes


# -- 6. the check's own work: CPython folds // and % of two int literals, in quadratic time ----


@pytest.mark.parametrize(
    "base",
    ["0x" + "f" * 25_001, "0o" + "7" * 33_334, "0b" + "1" * 100_001],
    ids=["hex", "octal", "binary"],
)
def test_an_integer_literal_past_100000_bits_is_refused_by_the_check(base: str) -> None:
    """``x = 0xfff... // 0xeee...`` of 749,000 and 250,000 hex digits (a 1 MB plan) took
    3.9-4.6 s to check, the checker's lock held: CPython's compiler folds ``//`` and ``%`` of
    two int constants before any limit applies, and 3.11 divides in quadratic time. Decimal
    literals stop at 4,300 digits (CPython's own rule); a literal in any base is held to
    100,000 bits (PL008, docs/LANGUAGE.md), where such a fold is a few milliseconds."""
    from planlang.check import check

    result = check(f"y = 1\nx = {base} // 3\n")
    assert [(p.code, p.line, p.col) for p in result.problems] == [("PL008", 2, 5)], result
    assert "100,000 bits" in result.problems[0].message


def test_an_integer_literal_of_100000_bits_is_a_plan() -> None:
    """The bound itself is inside: 25,000 hex digits is 100,000 bits."""
    from planlang.check import check

    assert check("x = 0x" + "f" * 25_000 + " // 3\n").ok
