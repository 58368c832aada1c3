"""Review 24: neighbours of this session's fixes (939e343..21ee246) that still fail.

Each test fails on 21ee246 unless it is a strict xfail of a defect left open. Nothing here
asserts on time within a tight bound: a slow case is given a deadline many times what it
needs and judged by its outcome.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from planlang.gate import PRICED_SETTINGS, Gate, Policy, _terms_sha
from planlang.standin import value_for
from planlang.standin_size import OutOfTime
from runtime.json_schema import schema_validator

ROOT = Path(__file__).resolve().parents[2]
MCP_SERVER = Path(__file__).resolve().parents[1] / "mcptools" / "mcp_tool_server.py"


# -- 1. the terms digest: inputs that differ must digest differently, and alike the same -------

FAN = 'result = parallel([lambda x=x: agent(x) for x in inputs["items"]])\n'


def test_inputs_with_keys_of_mixed_kinds_are_not_all_one_digest(tmp_path) -> None:
    """An embedder's inputs ``{0: "header", "items": [...]}`` (an int key beside text ones)
    cannot be ``json.dumps``-ed with sorted keys, and the digest's fallback named the whole
    value by its kind, ``<builtins.dict>``: every such inputs was one digest. A plan approved
    over 2 items (within ``max_median``) was found approved over 200, and ran them."""
    store, key = tmp_path / "gate.db", tmp_path / "gate.key"
    few = {0: "header", "items": ["a", "b"]}
    many = {0: "header", "items": [f"q{i}" for i in range(200)]}
    first = Gate(Policy(max_median=0.05), store=store, key_file=key, inputs=few, seeds=1,
                 isolation="inprocess")  # fmt: skip
    assert first.submit(FAN).approved
    second = Gate(Policy(max_median=0.05), store=store, key_file=key, inputs=many, seeds=1,
                  isolation="inprocess")  # fmt: skip
    assert second.find_approved(FAN) is None, "an approval over 2 items holds for 200"
    assert not second.submit(FAN).approved  # priced again: 2 credits median, over 0.05


@pytest.mark.parametrize(("one", "other"), [
    ({1: "a"}, {"1": "a"}),  # inputs[1] and inputs["1"] are different plans' data
    ({True: "a"}, {"true": "a"}),
    ({"t": (1, 2)}, {"t": [1, 2]}),  # type(inputs["t"]) tells them apart
    ({0: "h", "n": 2}, {0: "h", "n": 3}),
], ids=["int-key", "bool-key", "tuple-list", "mixed-keys"])  # fmt: skip
def test_inputs_a_plan_tells_apart_digest_apart(one, other) -> None:
    assert _terms_sha(Policy(), None, one) != _terms_sha(Policy(), None, other)


def test_json_inputs_keep_the_digest_stored_approvals_were_made_under() -> None:
    """Inputs read from a JSON file (every approval the CLI and MCP server stored) digest as
    they did: a fix of the digest for other inputs must not make every stored approval stale."""
    inputs = {"items": ["a", "b"], "n": 1.5, "x": None, "ok": True, "d": {"k": [1, {"z": "é"}]}}
    from runtime import Settings

    policy, settings = Policy(max_ceiling=1), Settings(default_price=0.5)
    body = {
        "policy": policy.model_dump(mode="json"),
        "inputs": inputs,
        "settings": settings.model_dump(mode="json", include=set(PRICED_SETTINGS)),
    }
    text = json.dumps(body, sort_keys=True, ensure_ascii=False)  # as 21ee246 digested them
    assert _terms_sha(policy, settings, inputs) == hashlib.sha256(text.encode()).hexdigest()


def test_the_digest_of_a_set_of_frozensets_is_the_same_in_every_process() -> None:
    """A set was digested as the sorted ``repr`` of its members, and a frozenset's ``repr``
    lists its members in hash order, which ``PYTHONHASHSEED`` changes: the gate that priced
    the plan and the process that runs it (another ``planlang`` process, the MCP server)
    disagreed, and the approval was never found again."""
    code = (
        "from planlang.gate import _terms_sha, Policy\n"
        "print(_terms_sha(Policy(), None, {'s': {frozenset({'alpha', 'beta', 'gamma', 'd'})}}))\n"
    )
    digests = set()
    for seed in ("1", "2", "3", "4", "5"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, check=True, cwd=ROOT)  # fmt: skip
        digests.add(done.stdout.strip())
    assert len(digests) == 1, digests


def test_inputs_that_hold_themselves_still_digest() -> None:
    looped: dict[str, object] = {"a": 1}
    looped["self"] = looped
    assert _terms_sha(Policy(), None, looped) == _terms_sha(Policy(), None, looped)
    assert _terms_sha(Policy(), None, looped) != _terms_sha(Policy(), None, {"a": 2, "self": {}})


# -- 2. the stand-in's if/then: a wrong first branch is explored to its last leaf --------------


def test_a_satisfiable_chain_of_ifs_is_answered_in_few_builds(monkeypatch) -> None:
    """``minimum 0, maximum 10`` and 20 parts ``if: {minimum: 5+i}, then: {maximum: 3}``: any
    value below 5 is an answer (before 2c34aed, a few dozen builds, 0.01 s). Each ``if`` is now
    tried one way, and on failing the other; taking the ``then`` (at least 5, at most 3) fails
    only once every later ``if`` was decided both ways: 18 parts took 10 s, 20 most of a
    minute. Counted in builds (``Maker.make`` calls), not seconds: stopped past 200,000."""
    from planlang import standin_maker

    class TooMany(Exception):
        pass

    made = [0]
    make = standin_maker.Maker.make

    def counted(self: standin_maker.Maker, schema: object, depth: int) -> object:
        made[0] += 1
        if made[0] > 200_000:
            raise TooMany
        return make(self, schema, depth)

    monkeypatch.setattr(standin_maker.Maker, "make", counted)
    schema = {
        "type": "integer",
        "minimum": 0,
        "maximum": 10,
        "allOf": [{"if": {"minimum": 5 + i}, "then": {"maximum": 3}} for i in range(20)],
    }
    try:
        value = value_for(schema, random.Random(0), deadline=time.monotonic() + 600)
    except (TooMany, OutOfTime):  # asserted outside: pytest is slow to show the deep stack
        value = f"no answer in {made[0]:,} builds"
    assert schema_validator(schema).is_valid(value), value


# -- 3. the tools' policy: a write rehearsed once is counted once, however often a run makes it -


@pytest.mark.slow
def test_writes_behind_a_real_answer_are_held_to_max_tool_writes(tmp_path) -> None:
    """Red team 24b's plan, counted: one ``append_line`` on the stand-in's answer, five on the
    real one. Every rehearsal writes once, within ``max_tool_writes=2``, so it is approved
    (``tools_named`` only holds a write no rehearsal called); the run writes five lines."""
    from planlang.mcp import McpTools, ServerConfig
    from runtime import LLM, Ledger, Run

    tools = McpTools([ServerConfig(name="t", command=(sys.executable, str(MCP_SERVER)))])
    out = tmp_path / "out.txt"
    source = (
        'seen = t.lookup(term="x")\n'
        'n = 5 if seen == "x: a word" else 1\n'
        "for i in range(n):\n"
        '    t.append_line(path=inputs["file"], line="w")\n'
        "result = seen\n"
    )
    try:
        gate = Gate(Policy(max_tool_writes=2), host=tools, inputs={"file": str(out)}, seeds=3,
                    isolation="inprocess")  # fmt: skip
        decision = gate.submit(source)
        if decision.approved:
            assert decision.plan is not None
            with Ledger(tmp_path / "answers.db") as ledger:
                with contextlib.suppress(Exception):  # a run stopped at the bound is right too
                    Run("run", llm=LLM(ledger)).run_sync(decision.plan)
            written = out.read_text().splitlines() if out.exists() else []
            assert len(written) <= 2, f"approved under max_tool_writes=2, wrote {len(written)}"
    finally:
        tools.close()


# -- 4. planlang raise: a cap below the old one, above what is spent, is taken and said so -----


def test_a_raise_below_the_cap_says_the_cap_was_lowered(tmp_path) -> None:
    """``planlang raise ID 5`` of a run with cap 10 that spent nothing: the run takes it (the
    rule is only "above what is spent") and said on its stderr "The cap was raised to 5"."""
    import json as json_

    from planlang.run_requests import take_requests
    from runtime import LLM, Budget, Ledger, Run

    run = Run("r", llm=LLM(Ledger(":memory:"), budget=Budget(10.0)))
    inbox = tmp_path / "requests"
    inbox.mkdir()
    (inbox / "1.000000-abcdef.json").write_text(json_.dumps({"raise": 5}))
    [(line, taken)] = take_requests(run, tmp_path)
    assert taken and run.llm.budget.cap == 5
    assert line == "The cap was lowered to 5 (planlang raise).", line


@pytest.mark.parametrize("schema", [
    {"type": "string", "maxLength": 10,
     "allOf": [{"if": {"minLength": 5 + i}, "then": {"maxLength": 3}} for i in range(20)]},
    {"type": "array", "maxItems": 10,
     "allOf": [{"if": {"minItems": 5 + i}, "then": {"maxItems": 3}} for i in range(20)]},
    {"type": "number", "maximum": 10,
     "allOf": [{"if": {"exclusiveMinimum": 5 + i}, "then": {"exclusiveMaximum": 3}}
               for i in range(20)]},
    # bounds of another kind bind nothing: a text answers, nothing is contradicted
    {"allOf": [{"minimum": 5}, {"maximum": 3}, {"type": ["string", "integer"]}]},
], ids=["string-ifs", "array-ifs", "exclusive-ifs", "other-kind-numbers"])  # fmt: skip
def test_contradictions_are_found_where_parts_meet_and_only_there(schema: dict) -> None:
    """Each chain is answered as the integer one is (its wrong branch found where it is
    merged); bounds that bind another kind than the answer's contradict nothing."""
    for seed in range(3):
        value = value_for(schema, random.Random(seed))
        assert schema_validator(schema).is_valid(value), (seed, value)


@pytest.mark.parametrize("schema", [
    {"allOf": [{"minLength": 5}, {"maxLength": 3}]},
    {"minLength": 5, "maxLength": 3},
    {"minItems": 4, "maxItems": 1},
    {"minProperties": 3, "maxProperties": 1},
    {"exclusiveMinimum": 3, "exclusiveMaximum": 3},
], ids=["allof-lengths", "lengths", "items", "properties", "exclusive"])  # fmt: skip
def test_an_untyped_schema_whose_guessed_kind_has_no_answer_is_answered(schema: dict) -> None:
    """No ``type``, bounds of one kind that contradict: any value of another kind is valid.
    The stand-in guessed the kind from the bounds, found no answer of it, and fell back to a
    text, which those same lengths bind (a word of 4 letters or more, say)."""
    for seed in range(5):
        value = value_for(schema, random.Random(seed))
        assert schema_validator(schema).is_valid(value), (seed, value)
