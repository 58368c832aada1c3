"""Score an audit's findings against an answer key: recall over bugs, precision over places.

A finding counts when it names the file and the function of a planted bug (the function that
encloses its line, or, as a second chance, the function it names) and its line is within
``window`` lines of the bug; the nearest bug wins. Saying a bug twice counts once. A wrong
report is counted once per place (file and function, or ten-line block outside functions), so
an auditor is not punished ten times for one confused function. Paths are normalised; a path
that is not a file of the library never counts, is never opened, and never raises.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.key import load_key
from kit.paths import PathRefused, normalise, safe_path
from kit.source import FunctionSpan, function_spans, name_at

BLOCK = 10


@dataclass(frozen=True)
class Score:
    """Recall, precision and what they were computed from."""

    recall: float
    precision: float
    found: tuple[str, ...]
    missed: tuple[str, ...]
    wrong_places: tuple[str, ...]
    findings: int
    hits: tuple[tuple[int, str], ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "recall": round(self.recall, 4),
            "precision": round(self.precision, 4),
            "found": list(self.found),
            "missed": list(self.missed),
            "wrong_places": list(self.wrong_places),
            "findings": self.findings,
        }


def match(
    findings: Iterable[Mapping[str, Any]],
    key: Mapping[str, Any] | str | Path,
    window: int = 5,
    library: str | Path | None = None,
) -> Score:
    """Score ``findings`` (dicts with ``file``, ``line`` and optionally ``function``).

    ``key`` is an answer key or its path. ``library`` is the audited copy, used to name the
    function around lines that are not in a bug's function; when a key path is given it
    defaults to the ``audited`` folder next to ``hidden``.
    """
    if window < 0:
        raise ValueError(f"The window must be zero or more lines, got {window!r}.")
    if isinstance(key, str | Path):
        default = Path(key).resolve().parent.parent / "audited"
        library = library if library is not None else (default if default.is_dir() else None)
        key = load_key(key)
    bugs = list(key["bugs"])
    files = set(key.get("files") or []) | {bug["path"] for bug in bugs}
    spans = _Spans(library, files)
    found: dict[str, int] = {}
    wrong: set[str] = set()
    hits: list[tuple[int, str]] = []
    items = list(findings)
    for index, finding in enumerate(items):
        path, line, named = _parse(finding)
        if path not in files:
            wrong.add(f"{path or '?'}:{_block(line)}")
            continue
        enclosing = _enclosing(spans, bugs, path, line)
        best = _nearest(bugs, path, line, enclosing, named, window)
        if best is not None:
            found[best["id"]] = found.get(best["id"], 0) + 1
            hits.append((index, best["id"]))
        else:
            wrong.add(f"{path}:{enclosing or named or _block(line)}")
    places_hit = {f"{b['path']}:{b['function']}" for b in bugs if b["id"] in found}
    wrong -= places_hit
    ids = [bug["id"] for bug in bugs]
    reported = len(found) + len(wrong)
    return Score(
        recall=len(found) / len(ids) if ids else 0.0,
        precision=len(found) / reported if reported else 0.0,
        found=tuple(i for i in ids if i in found),
        missed=tuple(i for i in ids if i not in found),
        wrong_places=tuple(sorted(wrong)),
        findings=len(items),
        hits=tuple(hits),
    )


def _parse(finding: Mapping[str, Any]) -> tuple[str, int | None, str | None]:
    raw_path = finding.get("file", finding.get("path", ""))
    path = normalise(raw_path) if isinstance(raw_path, str) else ""
    raw_line = finding.get("line")
    line: int | None = None
    if isinstance(raw_line, int | float) and not isinstance(raw_line, bool):
        line = int(raw_line) if raw_line == raw_line and abs(raw_line) < 1e12 else None
    elif isinstance(raw_line, str) and re.fullmatch(r"\s*-?[0-9]{1,12}\s*", raw_line):
        line = int(raw_line)
    named = finding.get("function")
    return path, line, named.strip() if isinstance(named, str) and named.strip() else None


def _block(line: int | None) -> str:
    return "line?" if line is None else f"block{line // BLOCK}"


def _same_function(named: str | None, function: str) -> bool:
    """The named function is the bug's: its qualified name, a dotted suffix of it (``g`` for
    ``C.g``), or the name with a module prefix (``pkg.mod.C.g``)."""
    if not named:
        return False
    named = named.removesuffix("()")
    return named == function or function.endswith("." + named) or named.endswith("." + function)


def _nearest(
    bugs: list[Mapping[str, Any]],
    path: str,
    line: int | None,
    enclosing: str | None,
    named: str | None,
    window: int,
) -> Mapping[str, Any] | None:
    if line is None:
        return None
    near = [
        bug
        for bug in bugs
        if bug["path"] == path
        and abs(int(bug["line"]) - line) <= window
        and (bug["function"] == enclosing or _same_function(named, bug["function"]))
    ]
    return min(near, key=lambda bug: (abs(int(bug["line"]) - line), bug["id"]), default=None)


def _enclosing(
    spans: _Spans, bugs: list[Mapping[str, Any]], path: str, line: int | None
) -> str | None:
    if line is None:
        return None
    known = spans.of(path)
    if known is not None:
        return name_at(known, line)
    for bug in bugs:  # without the library, only the bugs' own functions are known
        span = bug.get("span")
        if bug["path"] == path and span and span[0] <= line <= span[1]:
            return str(bug["function"])
    return None


class _Spans:
    """Function spans of library files, read lazily and only for files of the library."""

    def __init__(self, library: str | Path | None, files: set[str]) -> None:
        self.library = library
        self.files = files
        self.cache: dict[str, list[FunctionSpan] | None] = {}

    def of(self, path: str) -> list[FunctionSpan] | None:
        if self.library is None or path not in self.files:
            return None
        if path not in self.cache:
            try:
                resolved = _resolved(str(self.library), path)
                stat = resolved.stat()
                self.cache[path] = _spans_of_file(str(resolved), stat.st_mtime_ns, stat.st_size)
            except (PathRefused, OSError, SyntaxError, ValueError, UnicodeDecodeError):
                self.cache[path] = None
        return self.cache[path]


@functools.lru_cache(maxsize=4096)
def _resolved(library: str, path: str) -> Path:
    """The kit's safe resolution, memoised: resolving is most of the cost of scoring."""
    return safe_path(library, path)


@functools.lru_cache(maxsize=4096)
def _spans_of_file(path: str, mtime_ns: int, size: int) -> list[FunctionSpan]:
    """Spans of one file, cached by identity and version: scoring many runs reparses nothing."""
    return function_spans(Path(path).read_text(encoding="utf-8"))
