"""A simulated evaluation is a function of its seed: not of thread timing, nor of which thread
parsed a file first (docs/EVAL.md, "What is repeatable")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import bench.simulated
from bench.eval import Setup, run_design
from bench.simulated import SimulatedModel
from kit.library import PARSE_LOCK
from kit.source import function_spans
from lead.audit import settings_with_roles
from lead.scout import audited_root
from runtime import Settings

ALGOS = Path(__file__).resolve().parents[2] / "data" / "algos"
KEY = json.loads((ALGOS / "hidden" / "answer_key.json").read_text(encoding="utf-8"))

# Sample 1 of every lens is asked before (or after) sample 0 of the same question; the result
# holds only what sample 1 found. Parallel workers ask in either order, by thread timing.
PLAN = """
parts = shards(100000)
lenses = ["boundaries", "logic", "state", "general"]
found = []
for lens in lenses:
    for sample in {order}:
        found.append([sample, scan(parts[0], lens, sample)])
result = {{"findings": flatten([pair[1] for pair in found if pair[0] == 1])}}
"""


def simulated_setup() -> Setup:
    root = audited_root(ALGOS)
    return Setup(ALGOS, KEY, settings_with_roles(Settings()),
                 lambda seed: SimulatedModel(root, KEY, seed), budget=40.0)  # fmt: skip


def test_a_sample_s_answer_does_not_depend_on_the_order_the_samples_were_asked_in() -> None:
    setup = simulated_setup()
    rows = [
        run_design(setup, "order", "order", PLAN.format(order=order), {}, 40.0)
        for order in ("[0, 1]", "[1, 0]")
    ]
    assert [row.status for row in rows] == ["completed", "completed"]
    first, second = rows
    assert (first.findings, first.found, first.precision) == (
        second.findings, second.found, second.precision
    )  # fmt: skip


def test_the_simulated_model_parses_under_the_kit_s_lock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # CPython 3.11's ast.parse on two threads at once can raise SystemError (gh-106905): the
    # kit parses under kit.library.PARSE_LOCK, so the simulated model must take that same lock,
    # or a scan fails now and then and the run's numbers change with thread timing.
    held: list[bool] = []

    def spans(source: str) -> object:
        held.append(PARSE_LOCK.locked())
        return function_spans(source)

    monkeypatch.setattr(bench.simulated, "function_spans", spans)
    model = SimulatedModel(audited_root(ALGOS), KEY)
    model._functions("algos/graphs.py")
    assert held == [True]
