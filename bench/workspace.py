"""Private working copies of a corpus, one per core, where edits are tried and proven.

Every proof edits a file, runs its examples and restores it. Two proofs must never see each
other's edits, so each worker thread owns a full copy of the package (cheap next to the
proofs) and runs its child interpreters against it. Bytecode of an edited file is deleted before
and after each run: an edit of the same length within the same second would otherwise be
served from a stale ``.pyc``.
"""

from __future__ import annotations

import importlib.util
import queue
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.corpus import Corpus, encode_source, read_source
from bench.proof import Proof, run_examples


class Slot:
    """One private copy of the corpus, used by one thread at a time."""

    def __init__(self, corpus: Corpus, base: Path) -> None:
        self.corpus = corpus
        self.root = base
        top = corpus.root / corpus.package
        if top.is_file():  # a single-module library
            shutil.copy2(top, base / corpus.package)
        else:
            # Bytecode is kept (copy2 keeps mtimes, so it stays valid): the first import in a
            # fresh copy then costs a second, not a full compile of the package.
            shutil.copytree(top, base / corpus.package)

    def read(self, relative: str) -> str:
        """The file's text, decoded as its coding declaration says (``run`` encodes it back)."""
        return read_source(self.root / relative)

    def run(self, relative: str, timeout: float, source: str | None = None) -> Proof:
        """Run the examples of ``relative``; with ``source``, of that text in its place."""
        path = self.root / relative
        original = path.read_bytes()  # restored byte for byte, whatever its encoding
        if source is not None:
            self._write(path, encode_source(source, original))
        try:
            return run_examples(
                self.root,
                self.corpus.module_name(relative),
                relative,
                timeout,
                self.corpus.doctest_globals,
                self.corpus.optionflags,
            )
        finally:
            if source is not None:
                self._write(path, original)

    @staticmethod
    def _write(path: Path, data: bytes) -> None:
        cached = Path(importlib.util.cache_from_source(str(path)))
        cached.unlink(missing_ok=True)
        path.write_bytes(data)


@contextmanager
def slots(corpus: Corpus, count: int) -> Iterator[queue.Queue[Slot]]:
    """``count`` private copies in a queue; each task takes one and puts it back."""
    with tempfile.TemporaryDirectory(prefix="bench-work-") as scratch:
        pool: queue.Queue[Slot] = queue.Queue()
        for index in range(count):
            base = Path(scratch) / f"slot{index}"
            base.mkdir()
            pool.put(Slot(corpus, base))
        yield pool


@contextmanager
def borrowed(pool: queue.Queue[Slot]) -> Iterator[Slot]:
    slot = pool.get()
    try:
        yield slot
    finally:
        pool.put(slot)
