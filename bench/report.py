"""The evaluation's report: rows pooled over repeats, 95% intervals, verdicts, markdown.

A verdict "holds" only when the interval of its number clears the threshold; otherwise it is
"not shown" (which is not "false": the run cannot tell). Each verdict says what it rests on:
with the simulated model a number is fitted to the reference study, predicted by the fitted
model, or follows from a configured setting, and the report says which; with a real model it
is measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bench.calibration import FITTED, READ_HIT, SKEPTIC_FALSE, STUDY, VERIFIED
from bench.eval import DesignRun
from bench.intervals import Draws, Outcomes, bootstrap, interval

__all__ = ["EvalReport", "Verdict", "build_report", "render", "verdicts"]

Interval = tuple[float, float]


@dataclass
class Verdict:
    id: str
    claim: str
    holds: bool | None  # None: a design it needs did not complete
    evidence: str
    basis: str = "measured"
    # each number the verdict rests on: (estimate, low, high) of its 95% interval
    numbers: dict[str, tuple[float, float, float]] = field(default_factory=dict)


@dataclass
class StudyRow:
    design: str
    what: str
    study: float
    simulated: float
    interval: Interval
    within: bool
    basis: str


@dataclass
class EvalReport:
    title: str
    corpus: str
    model: str
    budget: float
    runs: list[DesignRun]  # pooled over the repeats
    verdicts: list[Verdict]
    command: str = ""
    intervals: dict[str, dict[str, Interval]] = field(default_factory=dict)
    study: list[StudyRow] = field(default_factory=list)
    rounds: list[list[DesignRun]] = field(default_factory=list)  # every repeat's rows

    def run(self, design_id: str) -> DesignRun:
        return next(r for r in self.runs if r.id == design_id)


# -- pooling and intervals ----------------------------------------------------------------


def outcomes(rows: Sequence[DesignRun], bug_ids: Sequence[str]) -> Outcomes:
    """One design's repeats as found-per-bug, false places and skeptic verdicts."""
    found = [[bug in set(row.found) for bug in bug_ids] for row in rows]
    return Outcomes.of(found, sum(r.wrong for r in rows), sum(r.agree for r in rows),
                       sum(r.judged for r in rows))  # fmt: skip


def pooled(rows: Sequence[DesignRun], outcome: Outcomes) -> DesignRun:
    """A design's row over its repeats: recall and precision pooled, costs averaged."""
    first = rows[0]
    failed = [r for r in rows if r.status != "completed"]
    budgets = [r.budget for r in rows if r.budget is not None]

    def avg(name: str) -> float:
        return sum(float(getattr(r, name)) for r in rows) / len(rows)

    return DesignRun(
        first.id, first.name,
        round(sum(budgets) / len(budgets), 6) if len(budgets) == len(rows) else None,
        failed[0].status if failed else "completed",
        recall=outcome.recall, precision=outcome.precision, credits=round(avg("credits"), 6),
        calls=round(avg("calls")), wall_seconds=avg("wall_seconds"),
        found=sorted({bug for r in rows for bug in r.found}), findings=round(avg("findings")),
        skeptic_accuracy=outcome.accuracy,
        note="; ".join(dict.fromkeys(r.note for r in rows if r.note)), repeats=len(rows),
        wrong=outcome.wrong, agree=outcome.agree, judged=outcome.judged, seed=first.seed,
    )  # fmt: skip


def build_report(title: str, corpus: str, model: str, budget: float,
                 rounds: list[list[DesignRun]], key: dict[str, Any], command: str = "",
                 simulated: bool = True) -> EvalReport:  # fmt: skip
    """Pool the repeats, bootstrap every number, judge the hypotheses."""
    bug_ids = [bug["id"] for bug in key["bugs"]]
    by_design = {row.id: [runs[i] for runs in rounds] for i, row in enumerate(rounds[0])}
    results = {d: outcomes(rows, bug_ids) for d, rows in by_design.items()}
    draws = bootstrap(results)
    runs = [pooled(rows, results[d]) for d, rows in by_design.items()]
    spans = {d: _spans(draw) for d, draw in draws.items()}
    report = EvalReport(title, corpus, model, budget, runs, [], command, spans, [], rounds)
    report.verdicts = verdicts(runs, draws, simulated)
    if simulated and _is_reference(key):
        report.study = study_rows(runs, spans)
    return report


def _spans(draw: Draws) -> dict[str, Interval]:
    spans = {"recall": interval(draw.recall), "precision": interval(draw.precision),
             "f1": interval(draw.f1)}  # fmt: skip
    if draw.accuracy is not None:
        spans["skeptic_accuracy"] = interval(draw.accuracy)
    return spans


def _is_reference(key: dict[str, Any]) -> bool:
    return key.get("corpus") == "networkx" and len(key["bugs"]) == STUDY.bugs


# -- verdicts -------------------------------------------------------------------------------

BASIS = {
    "H1": "recall of 1 and 4 fitted to the study; precision from the assumed false-alarm rate",
    "H1b": "prediction of the fitted model",
    "H4": f"recall cost fitted (study: {STUDY.slim_20k} -> {STUDY.fixed}); precision gain "
    f"follows from the assumed false-alarm rate and skeptic accuracy ({SKEPTIC_FALSE})",
    "H5": f"prediction; follows from the assumed read rate READ_HIT = {READ_HIT}",
    "H6": "follows from the configured skeptic accuracies: "
    f"{FITTED.skeptic_real:.2f}/{SKEPTIC_FALSE} without, {VERIFIED[0]}/{VERIFIED[1]} with "
    "verification",
}


def _ci(values: np.ndarray) -> str:
    low, high = interval(values)
    return f"{float(np.mean(values)):+.3f} [{low:+.3f}, {high:+.3f}]"


def _numbers(**named: np.ndarray) -> dict[str, tuple[float, float, float]]:
    return {name: (float(np.mean(v)), *interval(v)) for name, v in named.items()}


def verdicts(runs: list[DesignRun], draws: dict[str, Draws], simulated: bool) -> list[Verdict]:
    """Each hypothesis judged from the intervals of its numbers (never written by hand)."""
    rows = {r.id: r for r in runs}

    def done(*ids: str) -> bool:
        return all(i in rows and rows[i].status == "completed" for i in ids)

    def basis(vid: str) -> str:
        return BASIS[vid] if simulated else "measured"

    out = []
    for vid, other, claim in (
        ("H1", "1", "the workflow beats one agent (F1)"),
        ("H1b", "2", "it beats one agent given the same reading (F1)"),
    ):
        if not done("4", other):
            out.append(Verdict(vid, claim, None, "a design did not complete", basis(vid)))
            continue
        gap = draws["4"].f1 - draws[other].f1
        holds = interval(gap)[0] > 0
        out.append(Verdict(vid, claim, holds, f"F1(4) - F1({other}) {_ci(gap)}", basis(vid),
                           _numbers(f1_gain=gap)))  # fmt: skip
    claim = "skeptics raise precision by >= 0.15 at a cost of <= 0.05 recall"
    if done("4", "4-noskep"):
        gain = draws["4"].precision - draws["4-noskep"].precision
        loss = draws["4-noskep"].recall - draws["4"].recall
        holds = interval(gain)[0] >= 0.15 and interval(loss)[1] <= 0.05
        evidence = f"precision {_ci(gain)}, recall lost {_ci(loss)}"
        out.append(Verdict("H4", claim, holds, evidence, basis("H4"),
                           _numbers(precision_gain=gain, recall_loss=loss)))  # fmt: skip
    else:
        out.append(Verdict("H4", claim, None, "a design did not complete", basis("H4")))
    claim = "a second scan round adds bugs (recall)"
    if done("4", "4-round2"):
        gain = draws["4-round2"].recall - draws["4"].recall
        evidence = f"recall {_ci(gain)}"
        out.append(Verdict("H5", claim, interval(gain)[0] > 0, evidence, basis("H5"),
                           _numbers(recall_gain=gain)))  # fmt: skip
    else:
        out.append(Verdict("H5", claim, None, "a design did not complete", basis("H5")))
    claim = "running the failing call makes skeptics more accurate"
    with_, without = draws.get("4-verify"), draws.get("4")
    if (done("4", "4-verify") and with_ is not None and without is not None
            and with_.accuracy is not None and without.accuracy is not None):  # fmt: skip
        gain = with_.accuracy - without.accuracy
        evidence = f"skeptic accuracy {_ci(gain)}"
        out.append(Verdict("H6", claim, interval(gain)[0] > 0, evidence, basis("H6"),
                           _numbers(accuracy_gain=gain)))  # fmt: skip
    else:
        out.append(Verdict("H6", claim, None, "no skeptic verdicts to compare", basis("H6")))
    return out


# -- against the study ----------------------------------------------------------------------


def study_rows(runs: list[DesignRun], spans: dict[str, dict[str, Interval]]) -> list[StudyRow]:
    """The study's numbers beside the simulation's, on the reference corpus."""
    rows = {r.id: r for r in runs}
    table = [
        ("1", "one agent alone (0, 1, 4 of 72)", STUDY.one_agent, "fitted"),
        ("4-noskep", "slim plan, 20,000-token shards", STUDY.slim_20k, "fitted"),
        ("slim-100k", "slim plan, 100,000-token shards", STUDY.slim_100k, "fitted"),
        ("4", "fixed plan (slim + 3 skeptics, 2 votes)", STUDY.fixed, "fitted"),
        ("5", "the lead's plan", STUDY.lead, "prediction"),
    ]
    out = []
    for design, what, number, basis in table:
        if design in rows:
            recall = rows[design].recall
            within = abs(recall - number) <= STUDY.spread(number)
            out.append(StudyRow(design, what, number, recall, spans[design]["recall"], within,
                                basis))  # fmt: skip
    return out


# -- markdown ---------------------------------------------------------------------------------


def _span(spans: dict[str, Interval], name: str) -> str:
    low, high = spans.get(name, (0.0, 0.0))
    return f"[{low:.3f}, {high:.3f}]"


def render(report: EvalReport) -> str:
    """The report as markdown: rows with intervals, the study beside it, verdicts, timings."""
    repeats = report.runs[0].repeats if report.runs else 0
    lines = [
        f"# {report.title}",
        "",
        f"Corpus `{report.corpus}`, model {report.model}, budget {report.budget:g} credits "
        f"per design unless its name says otherwise; {repeats} repeat(s) pooled, 95% "
        "intervals from a bootstrap over bugs (with their repeats).",
        "",
        "| design | name | status | recall | 95% | precision | 95% | F1 | credits | calls |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report.runs:
        spans = report.intervals.get(r.id, {})
        lines.append(
            f"| {r.id} | {r.name} | {r.status} | {r.recall:.3f} | {_span(spans, 'recall')} | "
            f"{r.precision:.3f} | {_span(spans, 'precision')} | {r.f1:.3f} | {r.credits:g} | "
            f"{r.calls} |"
        )
    if report.study:
        lines += ["", "Against the reference study (within: at most 2 standard errors of a "
                  "72-bug run from the study's number):", "",
                  "| design | the study's row | study | simulated | 95% | within | basis |",
                  "|---|---|---|---|---|---|---|"]  # fmt: skip
        for s in report.study:
            lines.append(
                f"| {s.design} | {s.what} | {s.study:.3f} | {s.simulated:.3f} | "
                f"[{s.interval[0]:.3f}, {s.interval[1]:.3f}] | {'yes' if s.within else 'no'} | "
                f"{s.basis} |"
            )
    lines += ["", "| hypothesis | claim | verdict | from the numbers (95%) | basis |",
              "|---|---|---|---|---|"]  # fmt: skip
    for v in report.verdicts:
        verdict = {True: "holds", False: "not shown", None: "undecided"}[v.holds]
        lines.append(f"| {v.id} | {v.claim} | {verdict} | {v.evidence} | {v.basis} |")
    notes = [f"- design {r.id}: {r.note}" for r in report.runs if r.note]
    if notes:
        lines += ["", "Notes:", *notes]
    if report.command:
        lines += ["", f"Command: `{report.command}`"]
    timings = ", ".join(f"{r.id} {r.wall_seconds:.1f}" for r in report.runs)
    lines += ["", f"Wall seconds per design (mean of the repeats; not repeatable): {timings}."]
    return "\n".join(lines) + "\n"
