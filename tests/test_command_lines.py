"""The help of python -m bench and python -m lead: a sentence per command, no markup, and a
usage mistake is one line on stderr with exit code 2."""

from __future__ import annotations

import re

import pytest

from bench.__main__ import main as bench_main
from lead.__main__ import main as lead_main

COMMANDS = {
    bench_main: ["eval", "plant", "score", "survey"],
    lead_main: ["audit"],
}


@pytest.mark.parametrize("main", list(COMMANDS), ids=["bench", "lead"])
def test_the_help_lists_each_command_with_a_sentence_and_no_markup(
    main: object, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--help"]) == 0  # type: ignore[operator]
    text = capsys.readouterr().out
    listed = dict(re.findall(r"^  (\w+)\s{2,}(.+)$", text.split("Commands:")[1], re.MULTILINE))
    assert sorted(listed) == COMMANDS[main]  # type: ignore[index]
    for name, line in listed.items():
        assert line != name and line.endswith(".") and len(line.split()) >= 4, line
    for name in COMMANDS[main]:  # type: ignore[index]
        assert main([name, "--help"]) == 0  # type: ignore[operator]
        shown = capsys.readouterr().out
        assert "``" not in shown and ":func:" not in shown and "Usage:" in shown


@pytest.mark.parametrize(
    ("main", "argv"),
    [
        (bench_main, ["plant", "--bugs", "x"]),
        (bench_main, ["score", "--window", "-1", "f.json", "--key", "k"]),
        (bench_main, ["eval", "--budget", "lots"]),
        (bench_main, ["nope"]),
        (lead_main, ["audit", "corpus", "--replans", "many", "--budget", "1"]),
        (lead_main, []),
    ],
)
def test_a_usage_mistake_is_one_line_and_exit_2(
    main: object, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2  # type: ignore[operator]
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1 and captured.err.startswith("error: ")
