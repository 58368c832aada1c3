"""The simulated model: calibrated detection, false alarms, skeptics, and its lead's plans."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bench.simulated import SimulatedModel, detect_probability, plan_from_sheet
from kit.audit_words import render_file
from lead import scout
from planlang import check

ALGOS = Path(__file__).resolve().parents[2] / "data" / "algos"
ROOT = ALGOS / "audited"
KEY = json.loads((ALGOS / "hidden" / "answer_key.json").read_text(encoding="utf-8"))
BUG_KEYS = {f"{b['path']}::{b['function']}" for b in KEY["bugs"]}


def test_detection_is_calibrated_to_the_reference_study_and_clamped() -> None:
    assert detect_probability(20_000) == pytest.approx(0.38)
    assert detect_probability(100_000) == pytest.approx(0.18)
    assert detect_probability(1_000) == pytest.approx(0.38)
    assert detect_probability(1_000_000) == pytest.approx(0.18)
    mid = detect_probability((20_000 * 100_000) ** 0.5)  # halfway on log(tokens)
    assert mid == pytest.approx(0.28)
    sizes = [20_000, 30_000, 50_000, 80_000, 100_000]
    assert all(
        detect_probability(a) > detect_probability(b)
        for a, b in zip(sizes, sizes[1:], strict=False)
    )


def scan_message(files: list[str], padding: int = 0, nonce: str = "") -> list[dict[str, Any]]:
    text = "\n".join(render_file(f, (ROOT / f).read_text(encoding="utf-8")) for f in files)
    return [
        {"role": "system", "content": "ROLE: scan\nlens: general"},
        {"role": "user", "content": f"{nonce}\n{text}\n" + "#" * padding},
    ]


def found_share(model: SimulatedModel, files: list[str], padding: int, trials: int) -> float:
    bugs = [b for b in KEY["bugs"] if b["path"] in files]
    hits = 0
    for trial in range(trials):
        answer = model("scan", scan_message(files, padding, f"trial {trial}")).data
        hits += sum(f"{f['file']}::{f['function']}" in BUG_KEYS for f in answer["findings"])
    return hits / (trials * len(bugs))


def test_scans_find_bugs_at_the_calibrated_rate_and_fewer_in_big_shards() -> None:
    model = SimulatedModel(ROOT, KEY)
    files = sorted({b["path"] for b in KEY["bugs"]})
    small = found_share(model, files, 0, 150)
    big = found_share(model, files, 254_542 - 25_000, 150)  # about 100,000 tokens of text
    assert abs(small - 0.38) < 0.05
    assert abs(big - 0.18) < 0.05


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


def test_skeptics_judge_at_set_rates_that_verification_improves() -> None:
    plain, shown = skeptic_accuracy(False), skeptic_accuracy(True)
    assert plain == pytest.approx((0.85, 0.75), abs=0.06)
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
