"""The scout: plain code that writes the lead's one-page fact sheet.

The lead model plans from this page alone, so it must say what a plan needs to choose well
(how big the library is, how it splits into shards, what each role costs, how much money
there is, which words exist) and nothing else: at most about 500 tokens, because every token
of it is paid for on every lead call, replans included.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

from kit.paths import HIDDEN
from kit.shards import estimate_tokens, pack

__all__ = ["KIT_WORDS", "SHARD_OPTIONS", "audited_root", "corpus_files", "scout"]

# Targets the sheet offers; only those that change the shard count are shown.
SHARD_OPTIONS = (1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000)

# The audit kit's words as a plan calls them (the contract in docs/KIT.md).
KIT_WORDS = (
    "files() -> [{path, lines, tokens}]",
    "shards(target_tokens=None) -> [{id, paths, tokens}]",
    "numbered(path) -> str",
    'scan(shard, lens="general", sample=0) -> [finding]  # 1 scan call',
    "dedupe(findings) -> [candidate]  # one per file+function, adds reports",
    "key_of(finding) -> str",
    "batches(items, size) -> [[item]]",
    "flatten(lists) -> [item]",
    "check(batch, sample=0, evidence=None) -> [{key, real, reason}]  # 1 skeptic call",
    "vote(candidates, verdicts, need=2) -> [candidate]",
    "verify(finding) -> {ran, refused, outcome, actual, expected}  # runs failing_call, free",
    "report(findings) -> [{file, line, function, claim}]",
)
LENSES = ("boundaries", "logic", "state", "general")


def audited_root(corpus: str | Path) -> Path:
    """The folder agents read: ``corpus/audited`` when the corpus is a benchmark, else it."""
    root = Path(corpus)
    return root / "audited" if (root / "audited").is_dir() else root


def corpus_files(root: str | Path) -> list[str]:
    """Every ``.py`` file under ``root`` (relative, POSIX), never one under ``hidden/``."""
    base = Path(root)
    if not base.is_dir():
        raise FileNotFoundError(f"The corpus folder {str(root)!r} does not exist.")
    found = []
    for path in sorted(base.rglob("*.py")):
        relative = path.relative_to(base)
        if HIDDEN not in relative.parts and "__pycache__" not in relative.parts:
            found.append(relative.as_posix())
    return found


def scout(
    corpus: str | Path,
    budget: float,
    prices: Mapping[str, tuple[str, float]] | Mapping[str, float],
    *,
    options: Sequence[int] = SHARD_OPTIONS,
) -> str:
    """The fact sheet for ``corpus`` under ``budget`` credits with these role prices.

    ``prices`` maps a role to its price, or to ``(model, price)``.
    """
    root = audited_root(corpus)
    files = corpus_files(root)
    if not files:
        raise ValueError(f"The corpus folder {str(root)!r} holds no .py files to audit.")
    texts = {path: (root / path).read_text(encoding="utf-8") for path in files}
    tokens = {path: estimate_tokens(text) for path, text in texts.items()}
    folders: dict[str, list[str]] = defaultdict(list)
    for path in files:
        folders[path.rpartition("/")[0] or "."].append(path)
    total = sum(tokens.values())
    lines = [
        f"FACT SHEET: audit of {root.as_posix()}",
        f"Library: {len(files)} files, {total:,} tokens, "
        f"{sum(t.count(chr(10)) for t in texts.values()):,} lines.",
        "Folders: "
        + "; ".join(
            f"{name} ({len(members)} files, {sum(tokens[m] for m in members):,} tok)"
            for name, members in sorted(folders.items(), key=lambda kv: -len(kv[1]))[:6]
        ),
        "Biggest files: "
        + ", ".join(f"{p} {tokens[p]:,}" for p in sorted(files, key=lambda p: -tokens[p])[:5]),
        "Shard options (target tokens -> shards): " + _shard_counts(root, files, options),
        "Roles (model, credits per call): " + _roles(prices),
        f"Budget: {budget:g} credits for the whole run; a plan whose priced cost passes it is "
        "held, and the run stops when the money is spent.",
        "Lenses: " + ", ".join(LENSES) + ". Each scan of one shard through one lens is one "
        "call; smaller shards and more lenses find more bugs but cost more calls.",
        "Kit words:",
        *(f"  {word}" for word in KIT_WORDS),
        "Plan words: agent, parallel(thunks), stream, phase(name), log(msg), inputs.",
        "Skeptics are told most findings are false alarms; vote keeps a candidate that `need` "
        "of the verdict lists call real.",
        "Bind `result` to report(...).",
    ]
    return "\n".join(lines)


def _shard_counts(root: Path, files: list[str], options: Sequence[int]) -> str:
    shown: list[str] = []
    last = None
    for target in sorted(options):
        count = len(pack(files, target, root=root))
        if count != last:
            shown.append(f"{target:,} -> {count}")
            last = count
        if count == 1:
            break
    return ", ".join(shown)


def _roles(prices: Mapping[str, tuple[str, float]] | Mapping[str, float]) -> str:
    parts = []
    for role, value in sorted(prices.items()):
        if isinstance(value, tuple):
            model, price = value
            parts.append(f"{role} ({model}, {price:g})")
        else:
            parts.append(f"{role} ({float(value):g})")  # type: ignore[arg-type]
    return "; ".join(parts)
