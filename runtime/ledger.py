"""The answer ledger: every answer ever bought, keyed by exactly what was asked.

Why SQLite: one file that several threads and several processes can share safely (WAL mode
lets readers run beside a writer, ``busy_timeout`` makes writers queue instead of failing), and
a crash leaves only whole, committed rows behind. Each row is written in one transaction, so a
process killed by SIGKILL never leaves half an answer: the rerun pays only for what was lost.

The fingerprint is sha256 over canonical JSON of model, messages, parameters and the sample
index, so two samples of one question are two independent answers.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .reply import Reply

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    role TEXT,
    sample INTEGER NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    seconds REAL NOT NULL,
    credits REAL NOT NULL,
    created REAL NOT NULL,
    reply BLOB NOT NULL
)
"""


def fingerprint(
    model: str, messages: list[dict[str, Any]], params: dict[str, Any], sample: int
) -> str:
    """sha256 over canonical JSON of exactly what was asked."""
    asked = {"model": model, "messages": messages, "params": params, "sample": sample}
    canonical = json.dumps(asked, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class _Pending:
    """A row waiting for the next group commit."""

    __slots__ = ("values", "done", "stored", "error")

    def __init__(self, values: tuple[Any, ...]) -> None:
        self.values = values
        self.done = False
        self.stored = False
        self.error: Exception | None = None


class Ledger:
    """A SQLite answer store shared by threads (one connection, one lock) and processes."""

    def __init__(self, path: str | Path = ":memory:", *, busy_timeout: float = 30.0) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        # One connection behind a lock: ":memory:" must be one connection anyway, and SQLite
        # work here is tiny next to a model call, so per-thread connections would buy nothing.
        self._lock = threading.Lock()
        self._queue_lock = threading.Lock()
        self._queue: list[_Pending] = []
        self._db: sqlite3.Connection | None = sqlite3.connect(
            self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
        self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        if self.path != ":memory:":
            self._db.execute("PRAGMA journal_mode = WAL")
            # NORMAL in WAL mode: a commit survives a killed process (not a power cut), and
            # commits stay cheap enough for thousands of answers a second.
            self._db.execute("PRAGMA synchronous = NORMAL")
        self._db.execute(_SCHEMA)

    def __repr__(self) -> str:
        return f"Ledger({self.path!r})"

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            raise ValueError(f"The ledger {self.path!r} is closed.")
        return self._db

    key = staticmethod(fingerprint)

    def get(self, key: str) -> Reply | None:
        """The stored answer for ``key``, or None."""
        with self._lock:
            row = self._conn().execute("SELECT reply FROM answers WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return Reply.from_json(zlib.decompress(row[0]).decode("utf-8"))

    def put(self, key: str, reply: Reply) -> bool:
        """Store an answer; the first answer for a key wins. The row is committed on return.

        Group commit: a writer that finds others queued commits their rows with its own in one
        transaction, so many threads share one commit. Returns True when this call stored the
        row, False when the key was already there.
        """
        blob = zlib.compress(reply.to_json().encode("utf-8"), 1)
        entry = _Pending((
            key, reply.model, reply.role, reply.sample, reply.prompt_tokens,
            reply.completion_tokens, reply.seconds, reply.credits or 0.0, time.time(), blob,
        ))  # fmt: skip
        with self._queue_lock:
            self._queue.append(entry)
        with self._lock:
            if not entry.done:
                with self._queue_lock:
                    batch, self._queue = self._queue, []
                self._commit(batch)
        if entry.error is not None:
            raise entry.error
        return entry.stored

    def _commit(self, batch: list[_Pending]) -> None:
        db = self._conn()
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                for entry in batch:
                    cursor = db.execute(
                        "INSERT OR IGNORE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        entry.values,
                    )
                    entry.stored = cursor.rowcount == 1
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        except Exception as exc:
            for entry in batch:
                entry.error = exc
        finally:
            for entry in batch:
                entry.done = True

    def __contains__(self, key: object) -> bool:
        with self._lock:
            row = self._conn().execute("SELECT 1 FROM answers WHERE key = ?", (key,)).fetchone()
        return row is not None

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._conn().execute("SELECT COUNT(*) FROM answers").fetchone()
        return int(count)

    def keys(self) -> list[str]:
        with self._lock:
            rows = self._conn().execute("SELECT key FROM answers ORDER BY created").fetchall()
        return [row[0] for row in rows]

    def rows(self) -> Iterator[dict[str, Any]]:
        """Every row with its reply decompressed (for inspection and audits)."""
        with self._lock:
            rows = self._conn().execute("SELECT * FROM answers ORDER BY created").fetchall()
        names = [
            "key", "model", "role", "sample", "prompt_tokens", "completion_tokens",
            "seconds", "credits", "created", "reply",
        ]  # fmt: skip
        for row in rows:
            record = dict(zip(names, row, strict=True))
            record["reply"] = zlib.decompress(record["reply"]).decode("utf-8")
            yield record

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
