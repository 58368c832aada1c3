"""The evaluation end to end on the default corpus with the simulated model."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

import bench.eval_cli
from bench.eval import DesignRun, verdicts
from bench.eval_cli import command, main
from bench.simulated import SimulatedModel
from lead.scout import audited_root
from runtime import Reply

ALGOS = Path(__file__).resolve().parents[2] / "data" / "algos"
ENDPOINT = "http://models.invalid/v1"
IDS = ["1", "2", "3", "4", "5", "4-noskep", "4-round2", "4-verify"]


def f1(row: dict) -> float:
    total = row["recall"] + row["precision"]
    return 2 * row["recall"] * row["precision"] / total if total else 0.0


@pytest.mark.slow
def test_the_whole_evaluation_runs_and_its_verdicts_follow_from_its_numbers(
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
        assert f"| {row['id']} | {row['name']} | completed | {row['recall']:.3f} |" in text
        if row["budget"] is not None and row["id"] != "5":
            assert row["credits"] <= row["budget"]
    # Design 2 had the money design 4 spent; design 1 read the library once.
    assert rows["1"]["calls"] == 1
    assert rows["2"]["budget"] == pytest.approx(rows["4"]["credits"], abs=1.0)
    assert rows["4-noskep"]["skeptic_accuracy"] is None
    assert rows["4-verify"]["skeptic_accuracy"] is not None

    said = {v["id"]: v["holds"] for v in report["verdicts"]}
    w = rows["4"]
    expected = {
        "H1": f1(w) > f1(rows["1"]),
        "H1b": f1(w) > f1(rows["2"]),
        "H4": w["precision"] - rows["4-noskep"]["precision"] >= 0.15
        and rows["4-noskep"]["recall"] - w["recall"] <= 0.05,
        "H5": rows["4-round2"]["recall"] > w["recall"],
        "H6": rows["4-verify"]["skeptic_accuracy"] > w["skeptic_accuracy"],
    }
    assert said == expected
    for vid, holds in said.items():
        verdict = "holds" if holds else "does not hold"
        assert any(line.startswith(f"| {vid} |") and f"| {verdict} |" in line
                   for line in text.splitlines())  # fmt: skip


def row(design_id: str, recall: float, precision: float, accuracy: float | None = None,
        found: tuple[str, ...] = ()) -> DesignRun:  # fmt: skip
    return DesignRun(design_id, design_id, 10.0, "completed", recall, precision, 1.0, 1,
                     skeptic_accuracy=accuracy, found=list(found))  # fmt: skip


def test_verdicts_turn_when_the_numbers_turn() -> None:
    good = [row("1", 0.3, 0.8), row("2", 0.5, 0.5), row("4", 0.8, 0.9, 0.9, ("a", "b")),
            row("4-noskep", 0.82, 0.6), row("4-round2", 0.9, 0.9, found=("a", "b", "c")),
            row("4-verify", 0.8, 0.95, 0.95)]  # fmt: skip
    assert [v.holds for v in verdicts(good)] == [True, True, True, True, True]
    bad = [row("1", 0.9, 0.95), row("2", 0.9, 0.95), row("4", 0.8, 0.9, 0.9),
           row("4-noskep", 0.9, 0.8), row("4-round2", 0.8, 0.9),
           row("4-verify", 0.8, 0.9, 0.85)]  # fmt: skip
    assert [v.holds for v in verdicts(bad)] == [False, False, False, False, False]
    failed = [r if r.id != "4" else DesignRun("4", "4", 10.0, "held") for r in good]
    assert all(v.holds is None for v in verdicts(failed))


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
    argv = ["--corpus", str(ALGOS), "--endpoint", ENDPOINT, "--model", "gpt-x"]
    assert main([*argv, "--out", str(tmp_path / "eval.md"), "--json", str(js)]) == 0
    report = json.loads(js.read_text(encoding="utf-8"))
    assert report["model"] == f"gpt-x at {ENDPOINT}" and "real model" in report["title"]
    assert asked and set(asked) == {"gpt-x"}
