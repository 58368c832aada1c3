"""Plant proven bugs: one per chosen file, in a function with examples, each shown by a test.

Choice is seeded (files shuffled with ``random.Random(seed)``, edits per file with a generator
seeded by seed and path), and results are taken in that order whatever order the two workers
finish in, so the same source, seed and count give the same key. A bug counts only when at
least one and at most 40% of its file's examples fail: one that breaks nothing is not proven,
one that breaks everything is too easy to find.
"""

from __future__ import annotations

import ast
import doctest
import random
import re
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from bench.corpus import Corpus, read_source
from bench.edits import KINDS, Edit, apply, candidates
from bench.proof import Proof
from bench.validate import Validator
from bench.workspace import Slot, borrowed, slots
from kit.source import spans_of_tree

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
MAX_FAILING_SHARE = 0.4
# CPython 3.11 can fail spuriously when threads run ast.parse at once (gh-106905): the workers
# hold this lock for their parsing and release it while a child process runs the examples.
PARSE_LOCK = threading.Lock()
MIN_EXAMPLES = 3


@dataclass(frozen=True)
class Planted:
    """A proven bug, in the original file's line numbers."""

    path: str
    function: str
    edit: Edit
    examples: int
    failing: tuple[dict[str, object], ...]


@dataclass
class Outcome:
    """What happened to one file: planted, skipped (with a reason) or not provable."""

    path: str
    planted: Planted | None = None
    skipped: str | None = None
    tried: int = 0
    doctest_seconds: float = 0.0


@dataclass
class Planting:
    """All outcomes in seeded order, and the chosen bugs (the first ``count`` planted)."""

    bugs: list[Planted] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    eligible: int = 0

    @property
    def doctest_seconds(self) -> float:
        return sum(outcome.doctest_seconds for outcome in self.outcomes)


def count_examples(docstring: str) -> int:
    return len(doctest.DocTestParser().get_examples(docstring))


def eligible_functions(source: str | ast.Module) -> list[tuple[str, int, int, FunctionNode]]:
    """(name, start, end, node) of top-level functions whose own docstring has examples."""
    found = []
    tree = ast.parse(source) if isinstance(source, str) else source
    for span in spans_of_tree(tree):
        doc = ast.get_docstring(span.node, clean=False)
        if doc and count_examples(doc) > 0:
            found.append((span.name, span.start, span.end, span.node))
    return found


def file_examples(source: str | ast.Module) -> int:
    """Static count of doctest examples in all docstrings of a file."""
    tree = ast.parse(source) if isinstance(source, str) else source
    total = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            total += count_examples(doc) if doc else 0
    return total


def plant(
    corpus: Corpus,
    count: int,
    seed: int,
    timeout: float = 60.0,
    attempts: int = 12,
    workers: int = 2,
    progress: Callable[[Outcome], None] | None = None,
) -> Planting:
    """Plant up to ``count`` proven bugs in distinct files of ``corpus``."""
    rng = random.Random(seed)
    order = [path for path in corpus.files if _is_candidate(corpus, path)]
    rng.shuffle(order)
    kinds = list(KINDS)
    rng.shuffle(kinds)
    result = Planting(eligible=len(order))
    done: dict[int, Outcome] = {}
    stop = threading.Event()
    with slots(corpus, workers) as pool, ThreadPoolExecutor(workers) as executor:
        pending: dict[Future[Outcome], int] = {}
        next_index = 0
        while True:
            while (
                len(pending) < workers * 2 and next_index < len(order) and not _enough(done, count)
            ):
                position, path = next_index, order[next_index]
                preference = kinds[position % len(kinds) :] + kinds[: position % len(kinds)]

                def task(path: str = path, preference: list[str] = preference) -> Outcome:
                    with borrowed(pool) as slot:
                        return _try_file(slot, path, seed, preference, timeout, attempts, stop)

                pending[executor.submit(task)] = position
                next_index += 1
            if not pending:
                break
            finished, _ = wait(pending, return_when="FIRST_COMPLETED")
            for future in finished:
                done[pending.pop(future)] = outcome = future.result()
                if progress:
                    progress(outcome)
            if _enough(done, count):
                # Files still running lie beyond the chosen prefix: their results are dropped.
                stop.set()
                for future in pending:
                    future.cancel()
                wait(pending)
                break
    for position in range(len(order)):
        if len(result.bugs) >= count or position not in done:
            break
        outcome = done[position]
        result.outcomes.append(outcome)
        if outcome.planted is not None:
            result.bugs.append(outcome.planted)
    return result


def _is_candidate(corpus: Corpus, path: str) -> bool:
    """Enough examples and a function with its own: read as ``survey`` counts them, in the
    file's declared encoding (a latin-1 library is planted like any other)."""
    try:
        source = read_source(corpus.root / path)
        if source.count(">>>") < MIN_EXAMPLES:
            return False
        tree = ast.parse(source)
        return file_examples(tree) >= MIN_EXAMPLES and bool(eligible_functions(tree))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return False


def _enough(done: dict[int, Outcome], count: int) -> bool:
    """True when the first ``count`` planted files in seeded order are all known."""
    found = 0
    for position in range(len(done) + 1):
        if position not in done:
            return False
        if done[position].planted is not None:
            found += 1
            if found >= count:
                return True
    return False


def _try_file(
    slot: Slot,
    path: str,
    seed: int,
    preference: list[str],
    timeout: float,
    attempts: int,
    stop: threading.Event,
) -> Outcome:
    outcome = Outcome(path)
    baseline = slot.run(path, timeout)
    outcome.doctest_seconds += baseline.seconds
    if not baseline.all_pass:
        outcome.skipped = baseline.problem()
        return outcome
    source = slot.read(path)
    with PARSE_LOCK:
        valid = Validator(source)
        ordered = _ordered_edits(source, path, seed, preference)
    for name, edit in ordered:
        if outcome.tried >= attempts or stop.is_set():
            break
        with PARSE_LOCK:
            if not valid(edit):
                continue
        outcome.tried += 1
        edit_timeout = min(timeout, max(5.0, 5 * baseline.seconds))
        failing = _failing(slot, path, edit_timeout, apply(source, edit), baseline.total, outcome)
        if failing is not None:
            outcome.planted = Planted(path, name, edit, baseline.total, failing)
            return outcome
    return outcome


def _failing(
    slot: Slot, path: str, timeout: float, edited: str, total: int, outcome: Outcome
) -> tuple[dict[str, object], ...] | None:
    """The failing examples of ``edited`` when it proves a bug twice in a row, alike.

    An example whose output varies from run to run (ordering by ``id``, timing, a shared
    counter) can pass the clean run and fail the edited one by chance: the rerun keeps such an
    edit out, and keeps what the key records about the failures the same from run to run.
    """
    seen: tuple[dict[str, object], ...] | None = None
    for _ in range(2):
        proof = slot.run(path, timeout, edited)
        outcome.doctest_seconds += proof.seconds
        if not _proves(proof, total):
            return None
        failing = tuple(_clean(example.to_json()) for example in proof.failed)
        if seen is not None and failing != seen:
            return None
        seen = failing
    return seen


def _proves(proof: Proof, total: int) -> bool:
    failed = len(proof.failed)
    return proof.status == "ok" and 1 <= failed <= MAX_FAILING_SHARE * total


def _ordered_edits(
    source: str, path: str, seed: int, preference: list[str]
) -> list[tuple[str, Edit]]:
    """Edits of the file's example-bearing functions, round robin over kinds by preference."""
    rng = random.Random(f"{seed}:{path}")
    by_kind: dict[str, list[tuple[str, Edit]]] = {kind: [] for kind in preference}
    for name, start, end, node in eligible_functions(source):
        for edit in candidates(source, node):
            if start <= edit.line <= end:
                by_kind[edit.kind].append((name, edit))
    for edits in by_kind.values():
        rng.shuffle(edits)
    ordered: list[tuple[str, Edit]] = []
    while any(by_kind.values()):
        for kind in preference:
            if by_kind[kind]:
                ordered.append(by_kind[kind].pop(0))
    return ordered


def _clean(example: dict[str, object]) -> dict[str, object]:
    """Drop run-specific memory addresses so the key is identical from run to run."""
    return {
        key: re.sub(r"0x[0-9a-fA-F]+", "0x...", value) if isinstance(value, str) else value
        for key, value in example.items()
    }
