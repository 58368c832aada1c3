"""The evaluation end to end on the default corpus with the simulated model."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

import bench.eval_cli
from bench.eval import DesignRun
from bench.eval_cli import command, main
from bench.report import build_report, render
from bench.simulated import SimulatedModel
from lead.scout import audited_root
from runtime import Reply

ALGOS = Path(__file__).resolve().parents[2] / "data" / "algos"
ENDPOINT = "http://models.invalid/v1"
IDS = ["1", "2", "3", "4", "5", "4-noskep", "slim-100k", "4-round2", "4-verify"]


@pytest.mark.slow
def test_the_whole_evaluation_runs_and_its_verdicts_follow_from_its_intervals(
    tmp_path: Path,
) -> None:
    md, js = tmp_path / "eval.md", tmp_path / "eval.json"
    code = main(["--corpus", str(ALGOS), "--repeats", "2", "--out", str(md), "--json", str(js)])
    assert code == 0
    text = md.read_text(encoding="utf-8")
    report = json.loads(js.read_text(encoding="utf-8"))
    assert (
        "simulated" in report["title"]
        and text.startswith("# ")
        and "simulated" in text.splitlines()[0]
    )
    rows = {row["id"]: row for row in report["runs"]}
    assert list(rows) == IDS
    for row in rows.values():
        assert row["status"] == "completed" and row["repeats"] == 2
        assert 0 <= row["recall"] <= 1 and 0 <= row["precision"] <= 1
        assert row["calls"] >= 1 and row["credits"] > 0
        low, high = report["intervals"][row["id"]]["recall"]
        assert low <= row["recall"] <= high
        assert f"| {row['id']} | {row['name']} | completed | {row['recall']:.3f} |" in text
        if row["budget"] is not None and row["id"] != "5":
            assert row["credits"] <= row["budget"]
    # Design 1 read the library in one call; design 2 read it once per lens of design 4.
    assert rows["1"]["calls"] == 1 and rows["2"]["calls"] == 4
    assert rows["4-noskep"]["skeptic_accuracy"] is None
    assert rows["4-verify"]["skeptic_accuracy"] is not None
    assert len(report["rounds"]) == 2 and [r["seed"] for r in report["rounds"][1]] == [1] * 9

    said = {v["id"]: v for v in report["verdicts"]}
    rules = {
        "H1": lambda n: n["f1_gain"][1] > 0,
        "H1b": lambda n: n["f1_gain"][1] > 0,
        "H4": lambda n: n["precision_gain"][1] >= 0.15 and n["recall_loss"][2] <= 0.05,
        "H5": lambda n: n["recall_gain"][1] > 0,
        "H6": lambda n: n["accuracy_gain"][1] > 0,
    }
    assert sorted(said) == sorted(rules)
    for vid, rule in rules.items():
        assert said[vid]["holds"] == rule(said[vid]["numbers"]), vid
        verdict = "holds" if said[vid]["holds"] else "not shown"
        assert any(line.startswith(f"| {vid} |") and f"| {verdict} |" in line
                   for line in text.splitlines())  # fmt: skip
    assert "configured skeptic accuracies" in said["H6"]["basis"]


def outcome(design_id: str, found: list[list[bool]], wrong: int, agree: int = 0,
            judged: int = 0) -> DesignRun:  # fmt: skip
    return DesignRun(design_id, design_id, 10.0, "completed", 0.0, 0.0, 1.0, 1,
                     found=[f"b{i}" for i, hit in enumerate(found[0]) if hit], wrong=wrong,
                     agree=agree, judged=judged)  # fmt: skip


def rounds_of(rows: dict[str, tuple[float, int, tuple[int, int]]], n: int = 200) -> list:
    """One repeat; each design finds the first share of n bugs, with wrong places and
    skeptic verdicts (agree, judged)."""
    return [[outcome(d, [[i < share * n for i in range(n)]], wrong, *skeptics)
             for d, (share, wrong, skeptics) in rows.items()]]  # fmt: skip


KEY_200 = {"bugs": [{"id": f"b{i}"} for i in range(200)]}


def test_verdicts_hold_only_when_the_interval_clears_the_threshold() -> None:
    clear = {"1": (0.1, 10, (0, 0)), "2": (0.2, 150, (0, 0)), "4": (0.6, 5, (900, 1000)),
             "4-noskep": (0.6, 200, (0, 0)), "4-round2": (0.8, 5, (0, 0)),
             "4-verify": (0.6, 5, (990, 1000))}  # fmt: skip
    report = build_report("t", "c", "simulated", 10, rounds_of(clear), KEY_200)
    assert [v.holds for v in report.verdicts] == [True, True, True, True, True]
    same = {d: (0.5, 50, (900, 1000)) for d in clear}
    report = build_report("t", "c", "simulated", 10, rounds_of(same), KEY_200)
    assert [v.holds for v in report.verdicts] == [False, False, False, False, False]
    assert "| H5 | a second scan round adds bugs (recall) | not shown |" in render(report)
    rounds = rounds_of(clear)
    rounds[0][2] = DesignRun("4", "4", 10.0, "held")
    report = build_report("t", "c", "simulated", 10, rounds, KEY_200)
    assert all(v.holds is None for v in report.verdicts)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--corpus", "no/such/corpus"], "needs audited/ and hidden/answer_key.json"),
        (["--corpus", str(ALGOS), "--model", "gpt-x"], "needs --endpoint"),
        (["--corpus", str(ALGOS), "--name", "gpt-x"], "needs --endpoint"),
        (
            ["--corpus", str(ALGOS), "--endpoint", ENDPOINT, "--model", "simulated"],
            "cannot be used with --endpoint",
        ),
        (
            ["--corpus", str(ALGOS), "--endpoint", ENDPOINT, "--model", "a", "--name", "b"],
            "name different models",
        ),
        (["--corpus", str(ALGOS), "--budget", "-1"], "--budget must be a positive"),
        (["--corpus", str(ALGOS), "--repeats", "0"], "--repeats must be 1 or more"),
        (["--corpus", str(ALGOS), "--designs", "4,9"], "no design '9'"),
    ],
)
def test_usage_mistakes_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.slow
def test_with_an_endpoint_model_names_the_model_of_every_role(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No network: the endpoint's client is a simulated model that notes the model asked for.
    key = json.loads((ALGOS / "hidden" / "answer_key.json").read_text(encoding="utf-8"))
    simulated = SimulatedModel(audited_root(ALGOS), key)
    asked: list[str] = []

    def client_for(endpoint: str) -> object:
        assert endpoint == ENDPOINT

        def client(model: str, messages: list[dict], **params: object) -> Reply:
            asked.append(model)
            return simulated(model, messages, **params)

        return client

    monkeypatch.setattr(bench.eval_cli, "http_client", client_for)
    shown = " ".join(command.get_help(click.Context(command)).split())
    assert "--model MODEL with --endpoint: the model of every role" in shown
    js = tmp_path / "eval.json"
    argv = ["--corpus", str(ALGOS), "--endpoint", ENDPOINT, "--model", "gpt-x",
            "--ledger", str(tmp_path / "answers.db")]  # fmt: skip
    assert main([*argv, "--out", str(tmp_path / "eval.md"), "--json", str(js)]) == 0
    report = json.loads(js.read_text(encoding="utf-8"))
    assert report["model"] == f"gpt-x at {ENDPOINT}" and "real model" in report["title"]
    assert asked and set(asked) == {"gpt-x"}
