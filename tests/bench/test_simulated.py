"""The simulated model: fitted detection, one agent beyond its context, skeptics, its lead."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import bench.simulated
from bench.calibration import FITTED, READ_HIT, SKEPTIC_FALSE, visibility
from bench.simulated import SimulatedModel, plan_from_sheet
from kit.audit_words import render_file
from lead import scout
from planlang import check

ALGOS = Path(__file__).resolve().parents[2] / "data" / "algos"
ROOT = ALGOS / "audited"
KEY = json.loads((ALGOS / "hidden" / "answer_key.json").read_text(encoding="utf-8"))
BUG_KEYS = {f"{b['path']}::{b['function']}" for b in KEY["bugs"]}


def test_visibility_falls_with_the_shard_s_size_and_stays_a_probability() -> None:
    sizes = [500, 5_000, 20_000, 50_000, 100_000, 1_000_000]
    seen = [visibility(size) for size in sizes]
    assert all(a > b for a, b in zip(seen, seen[1:-1], strict=False))
    assert all(0.0 <= v <= 1.0 for v in seen) and seen[-1] == 0.0


def scan_message(files: list[str], padding: int = 0, nonce: str = "") -> list[dict[str, Any]]:
    text = "\n".join(render_file(f, (ROOT / f).read_text(encoding="utf-8")) for f in files)
    return [
        {"role": "system", "content": "ROLE: scan\nlens: general"},
        {"role": "user", "content": f"{nonce}\n{text}\n" + "#" * padding},
    ]


def found_share(files: list[str], padding: int, trials: int, context: int = 10**7) -> float:
    """The share of the bugs in ``files`` one scan finds, over ``trials`` seeds (each seed
    draws which bugs are visible)."""
    bugs = [b for b in KEY["bugs"] if b["path"] in files]
    hits = 0
    for trial in range(trials):
        model = SimulatedModel(ROOT, KEY, seed=trial, context_tokens=context)
        answer = model("scan", scan_message(files, padding)).data
        hits += sum(f"{f['file']}::{f['function']}" in BUG_KEYS for f in answer["findings"])
    return hits / (trials * len(bugs))


def test_scans_find_bugs_at_the_fitted_rate_and_fewer_in_big_shards() -> None:
    files = sorted({b["path"] for b in KEY["bugs"]})
    text = len("\n".join(m["content"] for m in scan_message(files)))
    for tokens in (20_000, 100_000):
        padding = int(tokens * 2.54542) - text
        share = found_share(files, padding, 300)
        assert abs(share - visibility(tokens) * READ_HIT) < 0.06, tokens


def reachable(files: list[str], start: int, tokens: float) -> set[str]:
    """The files an agent starting at ``start`` has begun reading within ``tokens``."""
    read, index = set(), start
    while tokens > 0 and len(read) < len(files):
        path = files[index % len(files)]
        read.add(path)
        tokens -= len(render_file(path, (ROOT / path).read_text(encoding="utf-8"))) / 2.54542
        index += 1
    return read


def test_one_agent_beyond_its_context_reads_a_run_of_files_and_stops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A context of 1,000 tokens and at most 3,000 read (uniform up to twice 1,500): what each
    # answer names lies in one run of files, in the message's order, from a start it picked.
    monkeypatch.setattr(bench.simulated, "FITTED", replace(FITTED, solo_read_tokens=1_500))
    files = sorted(p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.py"))
    runs = [reachable(files, start, 3_000) for start in range(len(files))]
    named = []
    for trial in range(60):
        model = SimulatedModel(ROOT, KEY, seed=trial, context_tokens=1_000)
        answer = model("scan", scan_message(files, 0, str(trial))).data["findings"]
        seen = {f["file"] for f in answer}
        named.append(seen)
        assert any(seen <= run for run in runs), seen
    assert sum(bool(seen) for seen in named) >= 10
    assert len(set().union(*named)) > max(len(run) for run in runs)  # starts vary


def test_findings_name_the_bug_s_line_function_and_failing_call() -> None:
    model = SimulatedModel(ROOT, KEY)
    bug = KEY["bugs"][0]
    for trial in range(40):
        findings = model("scan", scan_message([bug["path"]], 0, str(trial))).data["findings"]
        real = [f for f in findings if f["function"] == bug["function"]]
        if real:
            assert real[0]["line"] == bug["line"] and real[0]["file"] == bug["path"]
            assert real[0]["failing_call"] == bug["failing"][0]["source"].strip()
            return
    pytest.fail("40 scans never found the bug; the detection rate is broken.")


def test_answers_are_deterministic_per_question_and_vary_with_repeats() -> None:
    message = scan_message(["algos/graphs.py", "algos/heaps.py"])
    first, second = SimulatedModel(ROOT, KEY), SimulatedModel(ROOT, KEY)
    runs_a = [first("scan", message).text for _ in range(6)]
    runs_b = [second("scan", message).text for _ in range(6)]
    assert runs_a == runs_b and len(set(runs_a)) > 1


def skeptic_accuracy(verified: bool, trials: int = 300) -> tuple[float, float]:
    model = SimulatedModel(ROOT, KEY)
    real_key, false_key = sorted(BUG_KEYS)[0], "algos/arrays.py::not_a_bug"
    said_real = said_false = 0
    for trial in range(trials):
        body = json.dumps([{"key": real_key}, {"key": false_key}], indent=1)
        user = f"trial {trial}\nFINDINGS:\n{body}\n" + ("VERIFICATION:\n[]\n" if verified else "")
        messages = [
            {"role": "system", "content": "ROLE: skeptic"},
            {"role": "user", "content": user},
        ]
        verdicts = model("skeptic", messages).data["verdicts"]
        said = {v["key"]: v["real"] for v in verdicts}
        said_real += said[real_key]
        said_false += not said[false_key]
    return said_real / trials, said_false / trials


def test_skeptics_judge_at_the_fitted_and_set_rates_that_verification_improves() -> None:
    plain, shown = skeptic_accuracy(False), skeptic_accuracy(True)
    assert plain == pytest.approx((FITTED.skeptic_real, SKEPTIC_FALSE), abs=0.06)
    assert shown == pytest.approx((0.95, 0.92), abs=0.05)


@pytest.mark.parametrize("budget", [3, 8, 20, 60])
def test_the_simulated_lead_writes_a_checked_plan_that_fits_the_budget(budget: float) -> None:
    sheet = scout(ALGOS, budget, {"lead": ("m", 2.0), "scan": ("m", 1.0), "skeptic": ("m", 0.25)})
    plan = plan_from_sheet(sheet)
    assert check(plan).ok
    chosen = re.search(r"shards\((\d+)\)", plan)
    assert chosen is not None
    counts = dict(re.findall(r"([\d,]+) -> (\d+)", sheet))
    shards = int(counts[f"{int(chosen.group(1)):,}"])
    lenses = (
        plan.count('"', plan.index("for lens in"), plan.index("]", plan.index("for lens in"))) // 2
    )
    assert shards * lenses * 1.0 <= max(budget, 1.0)
