"""Review of 61a3c50 (schema patterns in RE2): paths where a plan's schema still reaches
jsonschema's own validators (Python's backtracking ``re``), the network, or a pattern no check
refused. A pattern's reading tells the engines apart without timing: ECMA-262's (RE2's) ``$``
ends the text, Python's ``re`` also matches it before a last newline."""

from __future__ import annotations

from typing import Any

import jsonschema._keywords
import jsonschema._legacy_keywords
import jsonschema._utils
import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from runtime.json_schema import check_schema, schema_validator

DRAFT7 = "http://json-schema.org/draft-07/schema#"
DRAFT4 = "http://json-schema.org/draft-04/schema#"
DRAFT2020 = "https://json-schema.org/draft/2020-12/schema"


class _NoBacktracking:
    """Stands in for ``re`` inside jsonschema: any use of it fails the test."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"jsonschema matched a plan's pattern with re.{name}")


@pytest.fixture
def no_re(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in (jsonschema._keywords, jsonschema._legacy_keywords, jsonschema._utils):
        monkeypatch.setattr(module, "re", _NoBacktracking())


SWITCHING = [
    # a subschema naming another draft
    ({"properties": {"x": {"$schema": DRAFT7, "pattern": "^a$"}}}, {"x": "a\n"}),
    # a subschema naming 2020-12 itself: jsonschema's own Draft202012Validator takes over
    ({"properties": {"x": {"$schema": DRAFT2020, "pattern": "^a$"}}}, {"x": "a\n"}),
    # the usual root "$schema", entered again through "$ref": "#"
    ({"$schema": DRAFT2020, "type": ["string", "array"], "pattern": "^a$", "items": {"$ref": "#"}},
     ["a\n"]),
    # a $ref'd definition naming draft-04: its patternProperties and additionalProperties
    ({"$defs": {"d": {"$schema": DRAFT4, "patternProperties": {"^a$": {}},
                      "additionalProperties": False}},
      "properties": {"x": {"$ref": "#/$defs/d"}}}, {"x": {"a\n": 1}}),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "instance"), SWITCHING)
def test_a_dollar_schema_inside_a_schema_never_hands_its_patterns_to_re(
    schema: dict[str, Any], instance: Any, no_re: None
) -> None:
    """``jsonschema``'s ``evolve`` picks a validator class by each subschema's ``$schema``:
    Draft7Validator, Draft4Validator, even the plain Draft202012Validator, all matching with
    ``re`` (``^(a+)+$`` against 30 letters froze the host ~40 s through each of these)."""
    check_schema(schema)
    errors = list(schema_validator(schema).iter_errors(instance))
    assert errors, "the pattern was read as Python's re reads it, not as RE2"


def test_a_remote_ref_is_never_fetched_by_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """jsonschema's default registry fetches a ``$ref``'s URL with ``urlopen``: a plan's schema
    made the host open any address (and a schema it fetched was never checked)."""
    import urllib.request

    opened: list[Any] = []

    def urlopen(request: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(getattr(request, "full_url", request))
        raise OSError("no network in this test")

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    schema = {"properties": {"x": {"$ref": "http://169.254.169.254/latest/meta-data/s.json"}}}
    with pytest.raises(SchemaError, match="names nothing this schema holds"):
        check_schema(schema)
    with pytest.raises(Exception):  # noqa: B017,PT011  unresolvable: what it is, not asked here
        list(schema_validator(schema).iter_errors({"x": 1}))
    assert opened == []


def test_a_pattern_reached_through_a_ref_into_data_is_refused_when_checked() -> None:
    """The metaschema checks ``format: regex`` only where it expects a schema; a ``$ref`` into
    a ``const`` (or ``enum``, ``default``, ``examples``) reaches a pattern it never checked,
    and the ``PatternError`` came at validation: a worker then asked its model to repair an
    answer for a schema no answer fits, turn after priced turn."""
    schema = {"type": "string", "$defs": {"d": {"const": {"pattern": "(?=a)"}}},
              "allOf": [{"$ref": "#/$defs/d/const"}]}  # fmt: skip
    with pytest.raises(SchemaError, match="linear time"):
        check_schema(schema)


def test_additional_properties_beside_empty_pattern_properties_words_as_jsonschema() -> None:
    schema = {"type": "object", "patternProperties": {}, "additionalProperties": False}
    ours = [e.message for e in schema_validator(schema).iter_errors({"b": 1})]
    theirs = [e.message for e in Draft202012Validator(schema).iter_errors({"b": 1})]
    assert ours == theirs


# The report's phase lines moved from re to RE2, which refuses a pattern holding a lone
# surrogate; a plan's f-string may hold one.
def test_a_phase_f_string_holding_a_lone_surrogate_does_not_break_the_timeline() -> None:
    from planlang.timeline import build_timeline

    source = 'phase(f"\\ud800{a}")\nphase("other")\n'
    events = [{"kind": "run_started", "t": 0.0, "concurrency": 1},
              {"kind": "phase", "t": 0.1, "name": "\ud800z"},
              {"kind": "phase", "t": 0.2, "name": "other"}]  # fmt: skip
    timeline = build_timeline(events, {}, [], source)  # raised PatternError
    assert [p.line for p in timeline.phases] == [1, 2]
