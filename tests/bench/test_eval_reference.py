"""The simulated evaluation on the reference corpus (networkx, 72 bugs, seed 1) against the
reference study: the recorded run (benchmarks/bench_eval.py) lands within the study's spread,
and a fresh run of the fixed plan gives exactly the recorded numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import REPO

from bench.calibration import (
    REFERENCE_LIBRARY_TOKENS,
    REFERENCE_LOG_TOKENS,
    STUDY,
    log_tokens_of_bugs,
)
from bench.corpus import load_package
from bench.eval import Setup, evaluate
from bench.rebuild import rebuild
from bench.simulated import SimulatedModel
from lead import scout
from lead.audit import settings_with_roles
from lead.scout import audited_root
from runtime import Settings

KEY = REPO / "data" / "networkx" / "hidden" / "answer_key.json"
RECORD = REPO / "benchmarks" / "RESULTS_eval.json"
STUDY_ROWS = {"1": STUDY.one_agent, "4-noskep": STUDY.slim_20k, "slim-100k": STUDY.slim_100k,
              "4": STUDY.fixed, "5": STUDY.lead}  # fmt: skip


@pytest.fixture(scope="module")
def record() -> dict[str, Any]:
    return json.loads(RECORD.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def networkx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reference") / "networkx"
    rebuild(load_package("networkx"), KEY, out)
    return out


def test_the_recorded_run_is_within_the_study_s_spread_on_every_study_row(
    record: dict[str, Any],
) -> None:
    rows = {row["id"]: row for row in record["runs"]}
    assert record["runs"][0]["repeats"] >= 3 and len(record["study"]) == len(STUDY_ROWS)
    for design, number in STUDY_ROWS.items():
        assert rows[design]["status"] == "completed"
        assert abs(rows[design]["recall"] - number) <= STUDY.spread(number), design
    assert all(row["within"] for row in record["study"])
    basis = {row["design"]: row["basis"] for row in record["study"]}
    assert basis.pop("5") == "prediction" and set(basis.values()) == {"fitted"}
    # The shard-size effect: the slim plan finds more at 20,000-token shards than at 100,000.
    assert record["intervals"]["4-noskep"]["recall"][0] > rows["slim-100k"]["recall"]
    assert record["intervals"]["slim-100k"]["recall"][1] < rows["4-noskep"]["recall"]
    verdicts = {v["id"]: v["basis"] for v in record["verdicts"]}
    assert "prediction" in verdicts["H5"] and "configured" in verdicts["H6"]


@pytest.mark.slow
def test_the_rebuilt_corpus_is_the_one_the_fit_used(networkx: Path) -> None:
    key = json.loads(KEY.read_text(encoding="utf-8"))
    audited = audited_root(networkx)
    for bug in key["bugs"]:
        line = (audited / bug["path"]).read_text(encoding="utf-8").splitlines()[bug["line"] - 1]
        assert line == bug["planted"], bug["id"]
    assert log_tokens_of_bugs(audited, key) == REFERENCE_LOG_TOKENS
    sheet = scout(networkx, 400, {"scan": 1.0})
    assert f"{REFERENCE_LIBRARY_TOKENS:,} tokens" in sheet


@pytest.mark.slow
def test_a_fresh_run_of_the_fixed_plan_gives_the_recorded_numbers(
    networkx: Path, record: dict[str, Any]
) -> None:
    key = json.loads(KEY.read_text(encoding="utf-8"))
    root = audited_root(networkx)
    first = record["rounds"][0]
    seed = first[0]["seed"]
    setup = Setup(networkx, key, settings_with_roles(Settings()),
                  lambda s: SimulatedModel(root, key, s), record["budget"], seed=seed,
                  designs=frozenset({"4"}))  # fmt: skip
    (fresh,) = evaluate(setup)
    recorded = next(row for row in first if row["id"] == "4")
    for name in ("status", "recall", "precision", "found", "wrong", "credits", "calls"):
        assert getattr(fresh, name) == recorded[name], name
