"""A worker makes its schema's text once: what the model is shown, and its validator's key."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from runtime.worker import build_messages, key_of_shown, shown_json

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=12,
)


@given(json_values)
def test_the_shown_text_is_json_dumps_and_its_key_is_the_sorted_ascii_text(value: object) -> None:
    shown = shown_json(value)
    assert shown == json.dumps(value, sort_keys=True, ensure_ascii=False)
    key = key_of_shown(shown)
    assert key is None or key == json.dumps(value, sort_keys=True)


def test_text_that_ensure_ascii_would_escape_gets_no_key() -> None:
    for odd in ("caf\u00e9", "\x7f", "\u2028"):
        assert key_of_shown(shown_json({"description": odd})) is None
    assert key_of_shown(shown_json({"type": "string", "a\x00": "\t"})) is not None


def test_the_system_message_shows_the_schema_as_json_dumps_does() -> None:
    schema = {"type": "object", "properties": {"n\u00e9": {"type": "integer"}}}
    (system, user) = build_messages("hello", system="Be brief.", schema=schema, data={"b": 1})
    assert system["content"].endswith(json.dumps(schema, sort_keys=True, ensure_ascii=False))
    assert system["content"].startswith("Be brief.\n\n")
    again = build_messages("hello", system="Be brief.", schema=schema, data={"b": 1},
                           shown=shown_json(schema))  # fmt: skip
    assert again == [system, user]
    assert user["content"] == 'hello\n\nData (JSON):\n{"b": 1}'


def test_a_schema_holding_nan_or_an_infinity_fails_the_worker_before_any_call() -> None:
    """JSON has no text for NaN or an infinity: ``json.dumps`` writes ``NaN``, which an
    endpoint refuses, and the stand-in met Python errors in such bounds (red team 17). The
    worker fails at its schema, saying so, and no model is asked."""
    from typing import Any

    from runtime import LLM, Ledger, Reply, Run

    asked: list[int] = []

    def client(model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        asked.append(1)
        return Reply(text="1")

    for bound in (float("nan"), float("inf"), float("-inf")):
        run = Run("nan", llm=LLM(Ledger(":memory:"), client=client))
        schema = {"type": "number", "minimum": bound}
        assert run.run_sync(lambda r, s=schema: r.agent("q", schema=s)) is None
        [record] = run.threads
        assert record.status == "failed", record.status
        assert "NaN or an infinity" in str(record.error), record.error
    assert asked == []
