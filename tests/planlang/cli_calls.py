"""``planlang`` commands called in this process, as the CLI tests call them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from planlang.cli import main


def run(args: list[str], capsys: Any, never: Iterable[str] = ()) -> tuple[int, str, str]:
    """``main(args)``'s exit code, stdout and stderr; a traceback, or any of ``never`` (a
    key, say) in what it printed, fails the test."""
    code = main(args)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    for secret in never:
        assert secret not in out + err
    return code, out, err
