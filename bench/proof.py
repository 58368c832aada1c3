"""Run one file's doctest examples in a child process and report each example's outcome.

A planted bug counts only when the library's own examples prove it, so examples must run
against the corpus copy being edited (first on the path of an isolated interpreter), in a
process of their own (an edit may hang or crash the interpreter) and under a timeout. The child
is isolated like ``python -I`` (no user site, no ``PYTHON*`` variables, no script folder on the
path) except that string hashing is seeded: an example whose output follows set or dict order
of strings would otherwise pass or fail by chance, and "prove" an edit that changed nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.pytest_config import DEFAULT_FLAGS

CHILD = Path(__file__).with_name("_doctest_child.py")


@dataclass(frozen=True)
class Example:
    """One example's outcome: docstring name, file line, source, expected and actual output."""

    name: str
    line: int
    source: str
    want: str
    got: str
    ok: bool

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "line": self.line,
            "source": self.source,
            "want": self.want,
            "got": self.got,
        }


@dataclass(frozen=True)
class Proof:
    """Outcome of one run: ok, missing (a package), import_error, timeout or crash."""

    status: str
    examples: tuple[Example, ...]
    detail: str
    seconds: float

    @property
    def total(self) -> int:
        return len(self.examples)

    @property
    def failed(self) -> tuple[Example, ...]:
        return tuple(example for example in self.examples if not example.ok)

    @property
    def all_pass(self) -> bool:
        return self.status == "ok" and self.total > 0 and not self.failed

    def problem(self) -> str:
        """Why this run does not qualify as a clean baseline, in one sentence."""
        if self.status == "missing":
            return f"needs the missing package {self.detail!r}"
        if self.status == "timeout":
            return f"its examples ran past the {self.detail} s timeout"
        if self.status != "ok":
            return f"its examples could not run ({self.status}: {self.detail})"
        if not self.examples:
            return "it has no runnable example"
        return f"{len(self.failed)} of {self.total} examples fail before any edit"


def child_environment() -> dict[str, str]:
    """This process's environment without ``PYTHON*`` variables, with a fixed hash seed."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    environment["PYTHONHASHSEED"] = "0"
    return environment


def run_examples(
    root: str | Path,
    module: str,
    relative: str,
    timeout: float,
    doctest_globals: dict[str, str] | None = None,
    optionflags: int = DEFAULT_FLAGS,
) -> Proof:
    """Run the doctest examples of ``root/relative`` (imported as ``module``) in a child."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-proof-") as scratch:
        result_path = Path(scratch) / "result.json"
        command = [
            sys.executable,
            "-s",  # -I without -E: PYTHONHASHSEED must be read
            "-P",
            str(CHILD),
            str(Path(root).resolve()),
            module,
            relative,
            str(result_path),
            str(optionflags),
            json.dumps(doctest_globals or {}),
        ]
        try:
            completed = subprocess.run(
                command,
                cwd=scratch,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=child_environment(),
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return Proof("timeout", (), f"{timeout:g}", time.perf_counter() - started)
        seconds = time.perf_counter() - started
        if not result_path.is_file():
            tail = completed.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
            detail = f"exit code {completed.returncode}" + (f": {tail[0]}" if tail else "")
            return Proof("crash", (), detail[:500], seconds)
        data = json.loads(result_path.read_text(encoding="utf-8"))
    examples = tuple(
        Example(
            str(item["name"]),
            int(item["line"]),
            str(item["source"]),
            str(item["want"]),
            str(item["got"]),
            bool(item["ok"]),
        )
        for item in data["examples"]
    )
    return Proof(str(data["status"]), examples, str(data["detail"]), seconds)
