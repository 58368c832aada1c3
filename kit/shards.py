"""Whole files with line numbers, packed into shards of about a target number of tokens.

A worker reads one shard in one call, and reports lines; so every file is shown whole with its
line numbers, and a folder stays together when it fits (related code is read side by side).
Packing is first fit over folders sorted biggest first, which wastes little room and is
deterministic: the same files always give the same shards.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from kit.paths import PathRefused, is_hidden, normalise, read_text, safe_path

# Characters per token of source code, measured on a BPE tokenizer over Python libraries;
# kept as the one estimate everywhere so shard sizes and budgets agree.
CHARS_PER_TOKEN = 2.54542


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text`` (characters / 2.54542, rounded up)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Shard:
    """Files (as labelled in the text), their numbered text and its estimated tokens."""

    files: tuple[str, ...]
    text: str
    tokens: int


def numbered(path: str | Path, root: str | Path | None = None) -> str:
    """The whole file with a header naming it and ``N| `` before each line.

    With ``root`` the file is read through the kit's safe reader and labelled relative to
    it; without, the path is used as given (never a path under ``hidden/``).
    """
    return _number(*_load(path, root))


def _number(label: str, text: str) -> str:
    lines = text.splitlines()
    body = "\n".join(f"{number}| {line}" for number, line in enumerate(lines, start=1))
    return f"=== {label} ({len(lines)} lines) ===\n{body}\n"


def pack(
    paths: list[str] | list[Path] | list[str | Path],
    target_tokens: int,
    root: str | Path | None = None,
) -> list[Shard]:
    """Pack numbered files into shards of at most about ``target_tokens`` each.

    Folders that fit are kept whole; a folder larger than a shard is split into its files. A
    single file larger than ``target_tokens`` gets a shard of its own.
    """
    if target_tokens <= 0:
        raise ValueError(f"target_tokens must be positive, got {target_tokens!r}.")
    texts: dict[str, str] = {}
    for path in paths:
        label, text = _load(path, root)
        texts[label] = _number(label, text)
    folders: dict[str, list[str]] = defaultdict(list)
    for label in texts:
        folders[label.rpartition("/")[0]].append(label)
    sizes = {label: estimate_tokens(text) for label, text in texts.items()}
    items: list[tuple[int, str, list[str]]] = []
    for folder, labels in folders.items():
        total = sum(sizes[label] for label in labels)
        if total <= target_tokens:
            items.append((total, folder, sorted(labels)))
        else:
            items.extend((sizes[label], label, [label]) for label in labels)
    items.sort(key=lambda item: (-item[0], item[1]))
    bins: list[tuple[int, list[str]]] = []
    for size, _, labels in items:
        for index, (used, members) in enumerate(bins):
            if used + size <= target_tokens:
                bins[index] = (used + size, members + labels)
                break
        else:
            bins.append((size, list(labels)))
    shards = []
    for _, members in bins:
        ordered = tuple(sorted(members))
        text = "\n".join(texts[label] for label in ordered)
        shards.append(Shard(ordered, text, estimate_tokens(text)))
    return shards


def _load(path: str | Path, root: str | Path | None) -> tuple[str, str]:
    if root is not None:
        resolved = safe_path(root, path)
        label = resolved.relative_to(Path(root).resolve()).as_posix()
        return label, read_text(root, label)
    label = Path(path).as_posix()
    if is_hidden(normalise(label)) or "hidden" in Path(path).resolve().parts:
        raise PathRefused(f"The path {str(path)!r} is under hidden/; audit tools never open it.")
    return label, Path(path).read_text(encoding="utf-8")
