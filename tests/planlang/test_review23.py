"""Review 23: neighbours of the last fixes that still fail (ECMA-262 pattern rewrite, stand-in,
timeline phase lines, what a run keeps counted against memory_mb, MCP run records). Each case
fails on the commit it was written against (14adb94)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from runtime import linear_regex

# -- 1. runtime/linear_regex.py: ECMA-262 meanings the rewrite still misses ---------------------


@pytest.mark.parametrize("text", ["\xa0", "\ufeff", "\u2029", "\u3000"])
def test_not_space_inside_a_class_is_ecmas(text: str) -> None:
    """``[\\S]`` is ECMA's non-white-space, as ``\\S`` outside a class already is."""
    assert not linear_regex.search(r"^[\S]$", text)
    assert not linear_regex.search(r"^[\Sa]$", text)


def test_a_range_ending_in_a_surrogate_does_not_match_an_astral_character() -> None:
    """``[\\uD000-\\uDFFF]`` holds code units up to U+DFFF only, never the emoji U+1F600."""
    assert not linear_regex.search(r"^[\uD000-\uDFFF]$", "\U0001f600")
    assert not linear_regex.search(r"^[\u0041-\uDBFF]$", "\U0001f600")


def test_a_range_across_the_surrogates_holds_a_lone_one() -> None:
    """``[\\uD7FF-\\uE000]`` holds U+D900, so a text of that lone surrogate matches."""
    assert linear_regex.search(r"^[\uD7FF-\uE000]$", "\ud900")


def test_a_range_from_a_surrogate_to_ffff_is_a_pattern() -> None:
    """``[\\uD800-\\uFFFF]`` is a valid ECMA class (U+D800..U+FFFF), not a PatternError."""
    assert linear_regex.search(r"^[\uD800-\uFFFF]$", "\uffff")


def test_a_lone_surrogate_matches_only_itself() -> None:
    """docs/LANGUAGE.md: a lone surrogate matches only itself, not U+10F800 (private use)."""
    assert not linear_regex.search(r"^\uD800$", "\U0010f800")
    assert not linear_regex.search("^\U0010f800$", "\ud800")


@pytest.mark.parametrize(("pattern", "text"), [(r"^[\b]$", "\x08"), (r"^a\cJb$", "a\nb")])
def test_ecma_class_backspace_and_control_escapes_compile(pattern: str, text: str) -> None:
    """ECMA's ``[\\b]`` (backspace) and ``\\cJ`` (control-J) are patterns, not PatternErrors."""
    assert linear_regex.search(pattern, text)


# -- 2. the stand-in: satisfiable schemas it refuses ---------------------------------------------


def _valid_on_every_seed(schema: dict[str, Any], seeds: int = 5) -> None:
    from planlang.standin import value_for
    from runtime.json_schema import schema_validator

    for seed in range(seeds):
        value = value_for(schema, random.Random(seed))
        assert schema_validator(schema).is_valid(value), (seed, value)


def test_standin_answers_the_surrogate_pair_pattern() -> None:
    """``^\\uD83D\\uDE00$`` (the one emoji, as commit 0f0932e reads it) gets an answer."""
    _valid_on_every_seed({"type": "string", "pattern": "^\\uD83D\\uDE00$"})


@pytest.mark.parametrize("schema", [
    {"allOf": [{"type": "string", "maxLength": 20}, {"maxLength": 2}]},
    {"allOf": [{"type": "integer", "minimum": 0, "maximum": 1000}, {"minimum": 1000}]},
])  # fmt: skip
def test_standin_allof_takes_the_tighter_bound(schema: dict[str, Any]) -> None:
    """An allOf part that narrows a bound an earlier part set is met (merged keeps the first)."""
    _valid_on_every_seed(schema)


@pytest.mark.parametrize("schema", [
    {"type": "array", "items": {"type": ["boolean", "null"]}, "uniqueItems": True,
     "minItems": 3},
    {"type": ["string", "null"], "not": {"type": "string"}},
])  # fmt: skip
def test_standin_draws_null_from_a_type_list(schema: dict[str, Any]) -> None:
    """A ``type`` list naming null may be answered null (only null, or a third distinct item)."""
    _valid_on_every_seed(schema)


def test_standin_if_then_without_else_may_miss_the_if() -> None:
    """``if minimum 5, then maximum 3`` on an integer: any integer below 5 is valid."""
    _valid_on_every_seed({"type": "integer", "if": {"minimum": 5}, "then": {"maximum": 3}})


# -- 3. timeline: an f-string phase's field is any text, line ends too ------------------------


@pytest.mark.parametrize("name", ["review a\nb", "review a\r\nb", "review a\u2028b"])
def test_timeline_finds_the_line_of_an_fstring_phase_whose_field_holds_a_line_end(
    name: str,
) -> None:
    """``phase(f"review {title}")`` with a title of two lines is still found on line 2."""
    from planlang.timeline import _line_of, phase_lines

    lines = phase_lines('title = "x"\nphase(f"review {title}")\n')
    assert _line_of(name, lines) == 2


# -- 4. what a run keeps of a plan, under process isolation, uncounted -------------------------


@pytest.mark.parametrize(("setup", "call"), [
    ('s = "x" * 999990', 'agent("q", model=s + str(i))'),
    ("s = chr(128512) * 200000", "log(s + str(i))"),
], ids=["agent-model", "log-astral"])  # fmt: skip
def test_what_a_run_keeps_is_held_to_the_memory_limit(setup: str, call: str) -> None:
    """300 calls keeping 240-300 MB of the plan's text (a worker's model name; log text of
    4-byte characters counted as 1 each) end as memory under memory_mb=64."""
    from host_process import python_json

    got = python_json(
        f"""
        import json
        import planlang
        from planlang import Limits
        src = '{setup}\\nfor i in range(300):\\n    {call}\\nresult = 1\\n'
        r = planlang.price(src, seeds=1, limits=Limits(seconds=200, memory_mb=64))
        print(json.dumps({{"problems": [p.message for p in r.problems]}}))
        """,
        120.0,
        "process",
    )
    assert any(p.startswith("memory:") for p in got["problems"]), got


# -- 5. MCP: a run that cannot start is not left "running" in its record -----------------------

_KEY = "sk-test-secret-0123456789abcdef0123456789"


def test_mcp_run_that_cannot_start_is_not_recorded_running(tmp_path, monkeypatch) -> None:
    """run_plan whose start fails (OSError) leaves no meta.json saying ``running``."""
    import planlang.mcp.server as server
    from planlang.mcp.server import PlanService, ServiceError
    from planlang.project import load_project
    from planlang.run_records import read_meta
    from runtime.testing import FakeOpenAI

    (tmp_path / "planlang.toml").write_text(
        '[planlang]\nretries = 0\n[planlang.roles.dear]\nmodel = "m"\nprice = 1.0\n'
        '[gate]\nmax_median = 10\n[state]\ngate_key = "gate.key"\n'
    )
    monkeypatch.chdir(tmp_path)

    def no_start(*args: Any, **kwargs: Any) -> Any:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(server, "start_run", no_start)
    with FakeOpenAI(api_key=_KEY) as fake:
        monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
        monkeypatch.setenv("LLM_API_KEY", _KEY)
        plans = PlanService(load_project(tmp_path / "planlang.toml"))
        submitted = plans.submit_plan('result = agent("q")\n')
        assert submitted["status"] == "approved", submitted
        with pytest.raises(ServiceError):
            plans.run_plan(submitted["id"])
    folders = [p for p in (plans.project.state_dir / "runs").glob("*") if p.is_dir()]
    statuses = [(read_meta(f) or {}).get("status") for f in folders]
    assert "running" not in statuses, statuses
