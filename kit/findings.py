"""Findings as plain data: normalising a worker's report, one place per function, votes.

Scores compare by file and function, and so must everything before them: two workers that
report the same bug at lines 41 and 43 of ``k_smallest`` made one report twice, not two. So a
finding is normalised as soon as it arrives (file relative to the corpus and inside the shard
the worker read, function = the one enclosing the line), and from then on a finding is known
by its key ``path::function``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kit.paths import normalise
from kit.source import FunctionSpan, name_at

__all__ = [
    "FIELDS",
    "MODULE_LEVEL",
    "batches",
    "dedupe",
    "flatten",
    "key_of",
    "normalise_finding",
    "report",
    "resolve_file",
    "vote",
]

FIELDS = ("file", "line", "function", "claim", "failing_call", "expected", "confidence")
MODULE_LEVEL = "<module>"  # the "function" of a line outside every function
# Model-written text is cut to these lengths: enough for a claim, too little to flood a prompt.
TEXT_LIMITS = {"claim": 1000, "failing_call": 2000, "expected": 1000}
DEFAULT_CONFIDENCE = 0.5

SpansOf = Callable[[str], Sequence[FunctionSpan]]


def resolve_file(name: Any, paths: Sequence[str]) -> str | None:
    """The shard path a worker meant by ``name``, or None when it names no file of the shard.

    Any spelling :func:`kit.paths.normalise` accepts is taken; so is a unique tail
    (``heaps.py`` for ``algos/heaps.py``), since workers often drop the package folder.
    """
    if not isinstance(name, str) or not name.strip():
        return None
    wanted = normalise(name)
    if wanted in paths:
        return wanted
    tails = [path for path in paths if path.endswith("/" + wanted)]
    return tails[0] if len(tails) == 1 else None


def normalise_finding(raw: Any, paths: Sequence[str], spans_of: SpansOf) -> dict[str, Any] | None:
    """One worker finding in the kit's shape, or None when its file is not in ``paths``.

    The function is the one enclosing the reported line (``kit.source``); only for a line
    outside every function is the worker's own function name used, and only when it names a
    function of that file.
    """
    if not isinstance(raw, Mapping):
        return None
    file = resolve_file(raw.get("file"), paths)
    if file is None:
        return None
    line = as_line(raw.get("line"))
    spans = spans_of(file)
    function = name_at(list(spans), line) if line > 0 else None
    if function is None:
        function = _named_function(raw.get("function"), spans) or MODULE_LEVEL
    finding: dict[str, Any] = {"file": file, "line": line, "function": function}
    for field, limit in TEXT_LIMITS.items():
        finding[field] = _as_text(raw.get(field))[:limit]
    finding["confidence"] = _as_confidence(raw.get("confidence"))
    return {name: finding[name] for name in FIELDS}


def as_line(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, float) and math.isfinite(value):
        return max(int(value), 0)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return 0


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _as_confidence(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return DEFAULT_CONFIDENCE
    return min(max(float(value), 0.0), 1.0)


def _named_function(value: Any, spans: Sequence[FunctionSpan]) -> str | None:
    """The span a worker's function name means (``f``, ``f()``, ``mod.f``, ``A.f``), if unique."""
    if not isinstance(value, str):
        return None
    name = value.strip().removesuffix("()").strip()
    if not name:
        return None
    names = {span.name for span in spans}
    if name in names:
        return name
    matches = {n for n in names if name.endswith("." + n) or n.endswith("." + name)}
    return matches.pop() if len(matches) == 1 else None


def key_of(finding: Mapping[str, Any]) -> str:
    """``path::function``: the one place a finding is about."""
    if not isinstance(finding, Mapping):
        raise TypeError(f"key_of() takes a finding (a dict), not {finding!r}.")
    file = normalise(_as_text(finding.get("file")))
    function = _as_text(finding.get("function")).strip() or MODULE_LEVEL
    return f"{file}::{function}"


def dedupe(findings: Iterable[Any]) -> list[dict[str, Any]]:
    """One candidate per place: the most confident report, with ``reports`` = how many said so.

    Candidates given again (with ``reports``) add their counts, so rounds can be merged.
    Sorted by most reports first, then by key, so the order does not depend on which worker
    finished first.
    """
    best: dict[str, dict[str, Any]] = {}
    counts: Counter[str] = Counter()
    for finding in findings:
        if not isinstance(finding, Mapping):
            continue
        key = key_of(finding)
        reports = finding.get("reports", 1)
        counts[key] += reports if isinstance(reports, int) and reports > 0 else 1
        kept = best.get(key)
        if kept is None or _confidence(finding) > _confidence(kept):
            best[key] = {name: finding.get(name) for name in FIELDS}
    candidates = [{**best[key], "reports": counts[key]} for key in best]
    candidates.sort(key=lambda c: (-c["reports"], key_of(c)))
    return candidates


def _confidence(finding: Mapping[str, Any]) -> float:
    return _as_confidence(finding.get("confidence"))


def batches(items: Sequence[Any], size: int) -> list[list[Any]]:
    """``items`` in consecutive lists of at most ``size``."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"batches() needs a size of at least 1, got {size!r}.")
    items = list(items)
    return [items[start : start + size] for start in range(0, len(items), size)]


def flatten(lists: Iterable[Any]) -> list[Any]:
    """One list from a list of lists; ``None`` (a failed worker) is skipped, other items kept."""
    flat: list[Any] = []
    for part in lists:
        if part is None:
            continue
        if isinstance(part, list | tuple):
            flat.extend(part)
        else:
            flat.append(part)
    return flat


def vote(
    candidates: Sequence[Mapping[str, Any]], verdicts: Iterable[Any], need: int = 2
) -> list[dict[str, Any]]:
    """The candidates that at least ``need`` skeptic answers called real.

    ``verdicts`` holds ``check()`` outputs (lists of ``{key, real, reason}``; ``None`` for a
    failed skeptic). One answer counts once per key, however often it repeats the key.
    """
    if isinstance(need, bool) or not isinstance(need, int) or need < 1:
        raise ValueError(f"vote() needs need >= 1, got {need!r}.")
    tally: Counter[str] = Counter()
    for answer in verdicts:
        if answer is None:
            continue
        items = [answer] if isinstance(answer, Mapping) else list(answer)
        tally.update(
            {str(v.get("key")) for v in items if isinstance(v, Mapping) and v.get("real") is True}
        )
    return [dict(c) for c in candidates if tally[key_of(c)] >= need]


def report(findings: Iterable[Any]) -> list[dict[str, Any]]:
    """The final list: one entry per place, ``{file, line, function, claim}``, sorted."""
    seen: dict[str, dict[str, Any]] = {}
    for finding in findings:
        if isinstance(finding, Mapping):
            seen.setdefault(
                key_of(finding),
                {
                    "file": normalise(_as_text(finding.get("file"))),
                    "line": as_line(finding.get("line")),
                    "function": _as_text(finding.get("function")) or MODULE_LEVEL,
                    "claim": _as_text(finding.get("claim")),
                },
            )
    return sorted(seen.values(), key=lambda f: (f["file"], f["line"], f["function"]))
