"""A schema's patterns (a plan's text) meet a model's answers (more untrusted text) in time
linear in the text: RE2, never Python's backtracking ``re`` with the interpreter's lock held.
Where a case times the host it is a heartbeat thread's longest wait, a bound far from both the
working case (milliseconds) and the broken one (tens of seconds to years)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from runtime import LLM, Ledger, Reply, Role, Run, Settings
from runtime.json_schema import check_schema, schema_validator
from runtime.linear_regex import fullmatch, search
from runtime.worker import checker_for

BACKTRACKS = "^(a+)+b$"  # 2**n steps for Python's re on n letters a
LETTERS = "a" * 30  # about 30 s a match for Python's re here; RE2: microseconds
SETTINGS = Settings(roles={"scan": Role(model="small", price=0.2)}, default_price=0.2)


@contextlib.contextmanager
def heartbeat() -> Iterator[list[float]]:
    """The longest wait of a thread that wakes every 10 ms, in the list once the block ends."""
    beats: list[float] = [time.monotonic()]
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(0.01):
            beats.append(time.monotonic())

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    longest: list[float] = []
    try:
        yield longest
    finally:
        stop.set()
        thread.join(60)
        beats.append(time.monotonic())
        longest.append(max(b - a for a, b in zip(beats, beats[1:], strict=False)))


class Answers:
    """A model that answers every question with one text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.calls: list[list[dict[str, Any]]] = []

    def __call__(self, model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        self.calls.append(messages)
        return Reply(text=self.text)


def test_a_models_answer_meets_a_backtracking_pattern_without_freezing_the_host() -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "pattern": BACKTRACKS}},
              "required": ["v"]}  # fmt: skip
    client = Answers(json.dumps({"v": LETTERS}))
    run = Run("test", llm=LLM(Ledger(":memory:"), client=client, settings=SETTINGS))
    with heartbeat() as longest:
        result = run.run_sync(lambda r: r.agent("q", schema=schema))
    assert result is None
    (worker,) = run.threads
    assert worker.status == "failed" and worker.turns == 2  # the answer, then one repair
    assert f"'{LETTERS}' does not match '{BACKTRACKS}'" in client.calls[1][-1]["content"]
    assert longest[0] < 5, f"the host stood still {longest[0]:.1f} s"


def test_a_property_name_meets_pattern_properties_and_additional_properties_linearly() -> None:
    schema = {"type": "object", "patternProperties": {BACKTRACKS: {"type": "integer"}},
              "additionalProperties": False}  # fmt: skip
    check_schema(schema)
    with heartbeat() as longest:
        errors = [e.message for e in schema_validator(schema).iter_errors({LETTERS: 1})]
        fits = list(schema_validator(schema).iter_errors({"aab": 1}))
    assert errors == [f"'{LETTERS}' does not match any of the regexes: '{BACKTRACKS}'"]
    assert fits == []
    assert longest[0] < 5, f"the host stood still {longest[0]:.1f} s"


@pytest.mark.parametrize(
    ("pattern", "why"),
    [("^(?=a)b", "invalid perl operator: (?="), ("(a)\\1", "invalid escape sequence: \\1"),
     ("a{1000}{1000}", "bad repetition operator"), ("[", "missing ]")],
)  # fmt: skip
def test_a_pattern_rE2_cannot_match_is_refused_with_where_and_why(pattern: str, why: str) -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "pattern": pattern}}}
    with pytest.raises(ValueError, match="not valid") as refused:
        checker_for(schema)
    message = str(refused.value)
    assert why in message and "properties/v/pattern" in message
    assert "backreferences and lookaround are not supported" in message
    assert "\n" not in message


def test_a_pattern_property_rE2_cannot_match_is_refused_too() -> None:
    with pytest.raises(SchemaError, match=r"\(at patternProperties\)"):
        check_schema({"patternProperties": {"(?<=x)y": {}}})


def test_unevaluated_properties_beside_pattern_properties_is_refused() -> None:
    """jsonschema finds what ``unevaluatedProperties`` leaves with Python's ``re`` over the
    ``patternProperties``: the pair is refused rather than matched by backtracking."""
    with pytest.raises(SchemaError, match="unevaluatedProperties and patternProperties"):
        check_schema({"allOf": [{"patternProperties": {"^a": {}}}],
                      "unevaluatedProperties": False})  # fmt: skip
    check_schema({"unevaluatedProperties": False, "properties": {"a": {}}})
    check_schema({"patternProperties": {"^a": {}}, "additionalProperties": False})


def test_patterns_read_as_ecma_262_reads_them() -> None:
    """JSON Schema's patterns are ECMA-262's: ``$`` ends the text (Python's matched before a
    last newline too), ``\\d`` is ASCII digits, ``\\p{L}`` a Unicode class (Python's ``re``
    refuses it, so a schema using it was not valid before)."""
    assert not search("^a$", "a\n")
    assert not search("^\\d$", "\u0663")  # ARABIC-INDIC DIGIT THREE
    check_schema({"type": "string", "pattern": "^\\p{L}+$"})
    assert search("^\\p{L}+$", "Zoë")
    assert fullmatch("a.*b", "a\u00e9b") and not fullmatch("a", "ab")


def test_a_lone_surrogate_is_matched_as_one_character() -> None:
    """JSON's ``"\\ud800"`` decodes to a lone surrogate, which UTF-8 (RE2's) cannot hold: in
    a text it is handed to RE2 as the three bytes it would be, which a pattern names by code
    point, so it matches itself and nothing else (it was refused in a pattern, and matched as
    U+FFFD in a text)."""
    assert search("^.a$", "\ud800a")
    assert not search("^a$", "\ud800a")
    assert search("\ud800", "x\ud800") and not search("\ud800", "x\ud801")
    assert not search("^\\uFFFD$", "\udc00") and search("^[\\uD800-\\uDFFF]$", "\udc00")


CASES = [
    ({"type": "string", "pattern": "^[a-z]+$"}, ["abc", "Abc", 3, ""]),
    ({"type": "object", "properties": {"a": {}}, "additionalProperties": False},
     [{"a": 1}, {"a": 1, "b": 2, "c": 3}, {"b": 1}, []]),
    ({"type": "object", "patternProperties": {"^x": {"type": "integer"}, "y$": {"type": "string"}},
      "additionalProperties": {"type": "boolean"}},
     [{"x1": 1, "ay": "s", "z": True}, {"x1": "no", "xy": 1, "z": 0}, {"q": None}]),
    ({"type": "object", "patternProperties": {"^x": {}}, "additionalProperties": False},
     [{"x": 1}, {"y": 1}, {"y": 1, "z": 2}]),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "instances"), CASES)
def test_the_messages_are_jsonschemas_word_for_word(
    schema: dict[str, Any], instances: list[Any]
) -> None:
    """A repair turn lists these to a model: where no pattern backtracks, what RE2 finds is
    what jsonschema itself says, error for error."""
    ours, theirs = schema_validator(schema), Draft202012Validator(schema)
    for instance in instances:
        seen = sorted((e.message, list(e.path)) for e in ours.iter_errors(instance))
        expected = sorted((e.message, list(e.path)) for e in theirs.iter_errors(instance))
        assert seen == expected, instance


def test_a_pattern_too_large_for_re2_says_so_not_that_it_backtracks() -> None:
    """``^[\\p{L} ]{1,200}$`` needs no backtracking; RE2 refuses it for its program's size
    (200 copies of a wide class), and the refusal says that."""
    from runtime.linear_regex import PatternError, compiled

    with pytest.raises(PatternError, match="program too large for RE2") as raised:
        compiled("^[\\p{L} ]{1,200}$")
    assert "backreferences" not in str(raised.value)
