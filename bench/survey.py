"""Measure a corpus before planting: size, shards, and which files' examples pass as shipped.

These are the numbers a benchmark is described by (docs/BENCH.md): how big the library is in
tokens and in 100,000-token shards, how many files carry examples, and how many of those run
clean in this environment, which bounds how many bugs can be proven.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from bench.corpus import Corpus, is_utf8, read_source
from bench.plant import MIN_EXAMPLES, file_examples
from bench.proof import Proof
from bench.workspace import borrowed, slots
from kit.shards import estimate_tokens, pack

SHARD_TOKENS = 100_000


@dataclass
class Survey:
    """Counts of one corpus; ``failures`` maps a file to why its examples do not all pass."""

    files: int = 0
    tokens: int = 0
    shards: int = 0
    with_examples: int = 0
    with_three: int = 0
    passing: int = 0
    failures: dict[str, str] = field(default_factory=dict)
    doctest_seconds: float = 0.0

    def lines(self) -> list[str]:
        return [
            f"files: {self.files}",
            f"tokens (chars / 2.54542): {self.tokens}",
            f"shards of {SHARD_TOKENS} tokens (kit.shards.pack): {self.shards}",
            f"files with doctest examples: {self.with_examples}",
            f"files with at least {MIN_EXAMPLES} examples: {self.with_three}",
            f"files whose examples all pass before any edit: {self.passing}",
        ]


def survey(corpus: Corpus, timeout: float = 60.0, workers: int = 2) -> Survey:
    """Count files, tokens, shards and examples, and run every file's examples once."""
    result = Survey(files=len(corpus.files))
    texts = {path: read_source(corpus.root / path) for path in corpus.files}
    result.tokens = sum(estimate_tokens(text) for text in texts.values())
    # The kit reads UTF-8; other files are UTF-8 in the audited copy, but not in the source.
    readable = [path for path in corpus.files if is_utf8(corpus.root / path)]
    result.shards = len(pack(readable, SHARD_TOKENS, root=corpus.root)) if readable else 0
    counts = {path: _examples(text) for path, text in texts.items()}
    with_examples = [path for path, count in counts.items() if count > 0]
    result.with_examples = len(with_examples)
    result.with_three = sum(1 for path in with_examples if counts[path] >= MIN_EXAMPLES)
    with slots(corpus, workers) as pool, ThreadPoolExecutor(workers) as executor:

        def baseline(path: str) -> Proof:
            with borrowed(pool) as slot:
                return slot.run(path, timeout)

        for path, proof in zip(with_examples, executor.map(baseline, with_examples), strict=True):
            result.doctest_seconds += proof.seconds
            if proof.all_pass:
                result.passing += 1
            else:
                result.failures[path] = proof.problem()
    return result


def _examples(text: str) -> int:
    try:
        return file_examples(text)
    except (SyntaxError, ValueError):
        return 0
