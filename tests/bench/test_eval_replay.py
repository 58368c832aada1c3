"""A run with a real model is kept: ``--endpoint`` writes every answer to the ledger and a
manifest beside it, and ``--replay LEDGER`` re-scores it with nothing sent (docs/EVAL.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from bench.eval_cli import main
from bench.simulated import SimulatedModel
from lead.scout import audited_root
from runtime.testing import FakeOpenAI

ALGOS = Path(__file__).resolve().parents[2] / "data" / "algos"
KEY = json.loads((ALGOS / "hidden" / "answer_key.json").read_text(encoding="utf-8"))


def table(path: Path) -> list[str]:
    """The report without its timing line (wall seconds are never repeatable)."""
    return [line for line in path.read_text(encoding="utf-8").splitlines()
            if not line.startswith("Wall seconds")]  # fmt: skip


def rows(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [{k: v for k, v in row.items() if k != "wall_seconds"} for row in data["runs"]]


@pytest.fixture
def server() -> Any:
    simulated = SimulatedModel(audited_root(ALGOS), KEY, seed=0)

    def responder(body: dict[str, Any]) -> str:
        params = {k: body[k] for k in ("response_format",) if k in body}
        return simulated(body["model"], body["messages"], **params).text

    with FakeOpenAI() as fake:
        fake.responder = responder
        yield fake


def test_a_collected_run_replays_to_the_same_table_with_no_request(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    ledger = tmp_path / "answers.db"
    collect = ["--corpus", str(ALGOS), "--endpoint", server.base_url, "--model", "gpt-x",
               "--ledger", str(ledger), "--repeats", "2", "--designs", "1,4,5",
               "--out", str(tmp_path / "a.md"), "--json", str(tmp_path / "a.json")]  # fmt: skip
    assert main(collect) == 0
    sent = server.requests
    assert sent > 0
    manifest = json.loads((tmp_path / "answers.db.manifest.json").read_text(encoding="utf-8"))
    assert manifest["designs"] == ["1", "4", "5"] and manifest["seeds"] == [0, 1]
    assert manifest["roles"]["scan"] == {"model": "gpt-x", "price": 1.0}
    assert len(manifest["corpus_sha256"]) == len(manifest["key_sha256"]) == 64
    assert manifest["options"]["budget"] == 20.0 and manifest["endpoint"] == server.base_url

    replay = ["--replay", str(ledger), "--out", str(tmp_path / "b.md"),
              "--json", str(tmp_path / "b.json")]  # fmt: skip
    assert main(replay) == 0
    assert server.requests == sent  # nothing was sent
    assert table(tmp_path / "b.md") == table(tmp_path / "a.md")
    assert rows(tmp_path / "b.json") == rows(tmp_path / "a.json")
    assert [row["status"] for row in rows(tmp_path / "b.json")] == ["completed"] * 3


def test_a_replay_on_another_corpus_is_refused(
    server: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "answers.db"
    collect = ["--corpus", str(ALGOS), "--endpoint", server.base_url, "--ledger", str(ledger),
               "--designs", "1", "--out", str(tmp_path / "a.md")]  # fmt: skip
    assert main(collect) == 0
    other = tmp_path / "other"
    shutil.copytree(ALGOS, other, ignore=shutil.ignore_patterns("source", "__pycache__"))
    first = sorted((other / "audited").rglob("*.py"))[0]
    first.write_text(first.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["--replay", str(ledger), "--corpus", str(other)]) == 2
    err = capsys.readouterr().err
    assert "is not the one the ledger was collected on" in err and "Traceback" not in err
    assert main(["--replay", str(ledger), "--endpoint", server.base_url]) == 2
    assert main(["--replay", str(tmp_path / "missing.db")]) == 2
