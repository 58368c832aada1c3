"""python -m bench: exit codes 0 ok, 1 refused or failed, 2 usage or I/O; no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bench_helpers import ALGOS, REPO

from bench.__main__ import main

KEY = str(ALGOS / "hidden" / "answer_key.json")
PLANT_ARGS = ["--out", "x", "--bugs", "1", "--seed", "1"]


def _findings(tmp_path: Path, data: object) -> str:
    path = tmp_path / "findings.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_score_prints_recall_and_precision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = json.loads(Path(KEY).read_text(encoding="utf-8"))
    bug = key["bugs"][0]
    findings = [{"file": f"./{bug['path']}", "line": bug["line"] + 2}, {"file": "x.py", "line": 1}]
    assert main(["score", _findings(tmp_path, {"findings": findings}), "--key", KEY]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["found"] == [bug["id"]]
    assert result["recall"] == round(1 / len(key["bugs"]), 4)
    assert result["precision"] == 0.5


def test_score_window_zero_demands_the_exact_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bug = json.loads(Path(KEY).read_text(encoding="utf-8"))["bugs"][0]
    findings = _findings(tmp_path, [{"file": bug["path"], "line": bug["line"] + 1}])
    assert main(["score", findings, "--key", KEY, "--window", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["found"] == []


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["score", "missing.json", "--key", KEY], 2, "missing.json"),
        (["score", "{findings}", "--key", "nokey.json"], 2, "nokey.json"),
        (["score", "{findings}", "--key", KEY, "--window", "-3"], 2, "-3"),
        (["score", "{notjson}", "--key", KEY], 2, "not JSON"),
        (["score", "{shape}", "--key", KEY], 1, "list of objects"),
        (["score", "{findings}", "--key", "{notjson}"], 2, "not JSON"),
        ([], 2, "required"),
        (["frobnicate"], 2, "frobnicate"),
        (
            ["plant", "--source", "nowhere", "--out", "x", "--bugs", "1", "--seed", "1"],
            2,
            "nowhere",
        ),
        (
            ["plant", "--package", "no_such_pkg_xyz", "--out", "x", "--bugs", "1", "--seed", "1"],
            2,
            "no_such_pkg_xyz",
        ),
        (["plant", "--source", "s", "--out", "x", "--bugs", "0", "--seed", "1"], 2, "0"),
    ],
)
def test_user_mistakes_give_a_sentence_and_an_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], code: int, message: str
) -> None:
    (tmp_path / "f.json").write_text("[]", encoding="utf-8")
    (tmp_path / "bad.json").write_text("{oops", encoding="utf-8")
    (tmp_path / "shape.json").write_text('{"findings": 3}', encoding="utf-8")
    names = {"{findings}": "f.json", "{notjson}": "bad.json", "{shape}": "shape.json"}
    argv = [str(tmp_path / names[a]) if a in names else a for a in argv]
    assert main(argv) == code
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_plant_fails_with_exit_1_when_too_few_bugs_can_be_proven(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    package = tmp_path / "src" / "tiny"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    source = (ALGOS / "source" / "algos" / "number_theory.py").read_text(encoding="utf-8")
    (package / "numbers.py").write_text(source, encoding="utf-8")
    out = tmp_path / "out"
    argv = ["plant", "--source", str(package), "--out", str(out), "--bugs", "2", "--seed", "3"]
    assert main([*argv, "--quiet"]) == 1
    assert "Only 1 of the 2" in capsys.readouterr().err
    key = json.loads((out / "hidden" / "answer_key.json").read_text(encoding="utf-8"))
    assert [bug["path"] for bug in key["bugs"]] == ["tiny/numbers.py"]


def test_the_module_runs_without_a_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "score"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "findings" in done.stderr
