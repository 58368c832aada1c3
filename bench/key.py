"""Write a planted corpus (``audited/`` and ``hidden/answer_key.json``) and read keys back.

The key is the only record of where the bugs are, so it is written deterministically (sorted,
no timings, no absolute paths): planting twice with the same seed gives a byte-identical key.
Lines in the key refer to the audited copy, the text agents actually read; ``source_line`` keeps
the original file's line so a test can rebuild the buggy file with its examples and rerun them.
"""

from __future__ import annotations

import bisect
import json
import shutil
from pathlib import Path
from typing import Any

from bench.audited import strip_examples
from bench.corpus import SKIPPED_DIRS, Corpus, declaring_utf8, is_library_file, read_source
from bench.edits import apply
from bench.plant import Planting
from kit.source import function_spans

KEY_FORMAT = 1


def write_corpus(corpus: Corpus, planting: Planting, out: Path, seed: int) -> dict[str, Any]:
    """Write ``out/audited`` and ``out/hidden`` (replacing both); return the key."""
    audited, hidden = out / "audited", out / "hidden"
    for folder in (audited, hidden):
        if folder.exists():
            shutil.rmtree(folder)
    by_path = {bug.path: bug for bug in planting.bugs}
    for path in corpus.top_paths():
        relative = path.relative_to(corpus.root).as_posix()
        if path.is_dir() or any(part in SKIPPED_DIRS for part in relative.split("/")[:-1]):
            continue
        target = audited / relative
        if relative.endswith(".py") and not is_library_file(relative):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if not relative.endswith(".py"):
            if not relative.endswith((".pyc", ".pyo")):
                shutil.copyfile(path, target)
            continue
        source = read_source(path)  # the audited copy is UTF-8, whatever the original's coding
        if relative in by_path:
            source = apply(source, by_path[relative].edit)
        target.write_text(declaring_utf8(strip_examples(source).text), encoding="utf-8")
    bugs = []
    for number, bug in enumerate(sorted(planting.bugs, key=lambda b: b.path), start=1):
        source = apply(read_source(corpus.root / bug.path), bug.edit)
        stripped = strip_examples(source)
        span = next(s for s in function_spans(source) if s.name == bug.function)
        bugs.append(
            {
                "id": f"bug-{number:03d}",
                "path": bug.path,
                "line": stripped.line_of(bug.edit.line),
                "function": bug.function,
                "span": [
                    _audited_line(stripped.kept, span.start),
                    _audited_line(stripped.kept, span.end),
                ],
                "kind": bug.edit.kind,
                "original": bug.edit.original,
                "planted": bug.edit.planted,
                "source_line": bug.edit.line,
                "examples": bug.examples,
                "failing": list(bug.failing),
            }
        )
    key = {
        "format": KEY_FORMAT,
        "corpus": corpus.name,
        "seed": seed,
        "files": list(corpus.files),
        "bugs": bugs,
    }
    report = {
        "eligible_files": planting.eligible,
        "visited": [
            {
                "path": outcome.path,
                "result": "planted"
                if outcome.planted
                else ("skipped" if outcome.skipped else "unproven"),
                "reason": outcome.skipped or "",
                "edits_tried": outcome.tried,
            }
            for outcome in planting.outcomes
        ],
    }
    hidden.mkdir(parents=True)
    _dump(hidden / "answer_key.json", key)
    _dump(hidden / "plant_report.json", report)
    return key


def _audited_line(kept: tuple[int, ...], original: int) -> int:
    """The audited line of ``original``, or of the nearest kept line before it."""
    return max(1, bisect.bisect_right(kept, original))


def _dump(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


class KeyFileError(ValueError):
    """An answer key that cannot be read or does not have the expected shape."""


def load_key(path: str | Path) -> dict[str, Any]:
    """Read and check an answer key; raises :class:`KeyFileError` with the reason."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise KeyFileError(f"The key {str(path)!r} cannot be read: {error.strerror}.") from None
    except json.JSONDecodeError as error:
        raise KeyFileError(f"The key {str(path)!r} is not JSON: {error.msg}.") from None
    if not isinstance(data, dict) or not isinstance(data.get("bugs"), list):
        raise KeyFileError(f"The key {str(path)!r} has no list of bugs.")
    return data


class SourceMismatch(ValueError):
    """A key's bug does not fit the source it is applied to (another version of the file)."""


def planted_source(bug: dict[str, Any], source: str) -> str:
    """The text of ``source`` with ``bug``'s planted line in place of its original line.

    ``bug`` is one entry of a key's ``bugs``; ``source`` is the unedited file it was planted in
    (with its examples). The line at ``source_line`` must read exactly ``original``, so a key
    replayed against another release of the library fails loudly instead of proving nothing.
    """
    lines = source.splitlines(keepends=True)
    number = bug["source_line"]
    if not 1 <= number <= len(lines):
        raise SourceMismatch(
            f"{bug['id']}: {bug['path']} has {len(lines)} lines, so it has no line {number}."
        )
    found = lines[number - 1].rstrip("\r\n")
    if found != bug["original"]:
        raise SourceMismatch(
            f"{bug['id']}: line {number} of {bug['path']} reads {found!r}, "
            f"not the key's original {bug['original']!r}."
        )
    lines[number - 1] = bug["planted"] + lines[number - 1][len(found) :]
    return "".join(lines)
