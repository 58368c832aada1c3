"""The fact sheet and the lead's command line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kit.shards import pack
from lead import corpus_files, scout
from lead.__main__ import main
from lead.scout import KIT_WORDS

ALGOS = Path(__file__).resolve().parents[2] / "data" / "algos"
PRICES = {"lead": ("big", 2.0), "scan": ("small", 1.0), "skeptic": ("small", 0.25)}


def test_the_sheet_fits_a_page_and_says_what_a_plan_needs() -> None:
    sheet = scout(ALGOS, 40, PRICES)
    assert len(sheet) <= 2200  # about 500 tokens at 4 characters a token
    files = corpus_files(ALGOS / "audited")
    assert f"Library: {len(files)} files" in sheet
    assert "Budget: 40 credits" in sheet
    assert "scan (small, 1)" in sheet and "skeptic (small, 0.25)" in sheet
    for word in KIT_WORDS:
        assert word.split("(")[0] in sheet
    assert "hidden" not in sheet and "answer_key" not in sheet


def test_the_shard_counts_on_the_sheet_are_the_kit_s_packing() -> None:
    sheet = scout(ALGOS, 40, {"scan": 1.0})
    options = re.search(r"Shard options \(target tokens -> shards\): (.*)", sheet)
    assert options is not None
    files = corpus_files(ALGOS / "audited")
    pairs = [part.split(" -> ") for part in options.group(1).split(", ")]
    assert len(pairs) >= 3
    for target, count in pairs:
        packed = pack(files, int(target.replace(",", "")), root=ALGOS / "audited")
        assert len(packed) == int(count)
    assert pairs[-1][1] == "1"  # the list stops where the whole library fits one shard


def test_a_folder_without_python_files_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="holds no .py files"):
        scout(tmp_path, 10, {"scan": 1.0})


def test_audit_without_an_endpoint_exits_2_with_a_clear_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    assert main(["audit", str(ALGOS), "--budget", "10"]) == 2
    err = capsys.readouterr().err
    assert "No model endpoint" in err and "--endpoint" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["audit", "no/such/folder", "--budget", "5"], "is not a folder"),
        (["audit", str(ALGOS), "--budget", "0"], "--budget must be a positive"),
        (["audit", str(ALGOS)], "--budget"),
        (["audit", str(ALGOS), "--budget", "5", "--key", "missing.json"], "is not a file"),
    ],
)
def test_usage_mistakes_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err
