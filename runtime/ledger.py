"""The answer ledger: every answer ever bought, keyed by exactly what was asked.

Why SQLite: one file that several threads and several processes can share safely (WAL mode
lets readers run beside a writer, ``busy_timeout`` makes writers queue instead of failing), and
a crash leaves only whole, committed rows behind. Each row is written in one transaction, so a
process killed by SIGKILL never leaves half an answer: the rerun pays only for what was lost.

The fingerprint is sha256 over canonical JSON of model, messages, parameters and the sample
index, so two samples of one question are two independent answers.
"""

from __future__ import annotations

import functools
import hashlib
import sqlite3
import threading
import time
import zlib
from _thread import allocate_lock as _allocate_lock
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .answer_store import AnswerStore, compress
from .canonical import dumps
from .claims import FileClaims, claim_or_answer
from .reply import Reply
from .stores import backend

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
    """sha256 over canonical JSON of exactly what was asked.

    The text is ``canonical.dumps({"model": ..., "messages": ..., "params": ...,
    "sample": ...})``, written out in sorted key order: the messages are serialised per call,
    the rest (the same for every call of a worker) is made once and remembered.
    """
    params_text = dumps(params) if params else "{}"
    try:
        tail = _tail(model, params_text, sample)
    except TypeError:  # an unhashable model or sample: serialise it without the cache
        tail = _tail.__wrapped__(model, params_text, sample)
    canonical = '{"messages":' + dumps(messages) + tail
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=256, typed=True)  # typed: sample True and 1 are different text
def _tail(model: str, params_text: str, sample: int) -> str:
    return f',"model":{dumps(model)},"params":{params_text},"sample":{dumps(sample)}}}'


_INSERT = "INSERT OR IGNORE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_MAX_BATCH = 1024  # 10 values a row; SQLite allows 32,766 parameters in one statement
# Commits between checkpoints: a commit adds about three 4 KB pages to the WAL, so this is
# close to SQLite's own default of a checkpoint per 1,000 pages.
_CHECKPOINT_EVERY = 300


@functools.lru_cache(maxsize=64)
def _insert_many(rows: int) -> str:
    return "INSERT OR IGNORE INTO answers VALUES " + ",".join(["(?,?,?,?,?,?,?,?,?,?)"] * rows)


class _Pending:
    """A row waiting for the next group commit, and how its writer learns the outcome."""

    __slots__ = ("values", "done", "stored", "error", "lead", "wake")

    def __init__(self, values: tuple[Any, ...]) -> None:
        self.values = values
        self.done = False
        self.stored = False
        self.error: Exception | None = None
        self.lead = False  # set when this writer must commit the next batch itself
        self.wake: Any = None  # a held lock its writer blocks on; released when it may go on


class Ledger(AnswerStore):
    """A SQLite answer store shared by threads (one connection, one lock) and processes.

    ``Ledger("postgresql://...")`` opens the shared server ledger instead (``PostgresLedger``,
    the same contract); a location with any other scheme is refused.
    """

    def __new__(cls, path: str | Path = ":memory:", **options: Any) -> Any:
        if cls is Ledger and backend(path) == "postgresql":
            from .pg_ledger import PostgresLedger

            return PostgresLedger(str(path), **options)  # not a Ledger: no second __init__
        return super().__new__(cls)

    def __init__(self, path: str | Path = ":memory:", *, busy_timeout: float = 30.0) -> None:
        self.path = str(path)
        # Questions in flight in other processes on this file (":memory:" is one process's).
        self._claims = None if self.path == ":memory:" else FileClaims(self.path + "-claims")
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        # One connection behind a lock: ":memory:" must be one connection anyway, and SQLite
        # work here is tiny next to a model call, so per-thread connections would buy nothing.
        self._lock = threading.Lock()
        self._queue_lock = threading.Lock()
        self._queue: list[_Pending] = []
        self._leading = False  # a writer is committing (or about to); the others wait for it
        self._db: sqlite3.Connection | None = None
        try:
            self._db = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            self._set_up(busy_timeout)
        except BaseException:  # a file that is not a ledger, say: nothing left open
            if self._db is not None:
                self._db.close()
            if self._claims is not None:
                self._claims.close()
            raise
        # Checkpoints (copying the WAL back into the database file, with an fsync) are run
        # by a writer after it has woken the others, on a second connection, instead of by
        # SQLite inside a commit that every queued writer waits for.
        self._busy_timeout = busy_timeout
        self._commits = 0
        self._checkpoint_lock = threading.Lock()
        self._checkpoint_db: sqlite3.Connection | None = None
        if self.path != ":memory:":
            self._db.execute("PRAGMA wal_autocheckpoint = 0")

    def _set_up(self, busy_timeout: float) -> None:
        db = self._conn()
        db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        if self._claims is None:
            db.execute(_SCHEMA)
            return
        with self._claims.setting_up(busy_timeout):  # two creating the file at once: one waits
            db.execute("PRAGMA journal_mode = WAL")
            # NORMAL in WAL mode: a commit survives a killed process (not a power cut), and
            # commits stay cheap enough for thousands of answers a second.
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute(_SCHEMA)

    def __repr__(self) -> str:
        return f"Ledger({self.path!r})"

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            raise ValueError(f"The ledger {self.path!r} is closed.")
        return self._db

    key = staticmethod(fingerprint)

    def claim(self, key: str, stop: Callable[[], bool] | None = None) -> Reply | None:
        """Wait while another process pays for ``key``: its answer, or None once ours to pay.

        After None the caller pays and ``put``s, then calls ``unclaim``, which lets go.
        """
        if self._claims is None:
            return None
        return claim_or_answer(key, self._claims.try_claim, self.get, self._claims.release, stop)

    def unclaim(self, key: str) -> None:
        """Let go of a claim (after the answer is committed, or the call failed)."""
        if self._claims is not None:
            self._claims.release(key)

    def get(self, key: str) -> Reply | None:
        """The stored answer for ``key``, or None."""
        with self._lock:
            row = self._conn().execute("SELECT reply FROM answers WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return Reply.from_json(zlib.decompress(row[0]).decode("utf-8"))

    def put(self, key: str, reply: Reply) -> bool:
        """Store an answer; the first answer for a key wins. The row is committed on return.

        Group commit: a writer that finds no commit running leads and commits every row queued
        by then in one transaction; writers arriving meanwhile wait for a leader to commit
        theirs (see ``_lead``). Returns True when this call stored the row, False when the key
        was already there.
        """
        blob = compress(reply.to_json().encode("utf-8"))
        entry = _Pending((
            key, reply.model, reply.role, reply.sample, reply.prompt_tokens,
            reply.completion_tokens, reply.seconds, reply.credits or 0.0, time.time(), blob,
        ))  # fmt: skip
        with self._queue_lock:
            self._queue.append(entry)
            if self._leading:
                entry.wake = _allocate_lock()
                entry.wake.acquire()
            else:
                self._leading = entry.lead = True
        if not entry.lead:
            try:
                entry.wake.acquire()  # released once our row is committed, or we must lead
            except BaseException:  # Ctrl-C: first do our part, or every later writer waits
                entry.wake.acquire()
                if entry.lead:
                    self._lead()
                raise
        if entry.lead:
            self._lead()
        if entry.error is not None:
            raise entry.error
        return entry.stored

    def _lead(self) -> None:
        """Commit the rows queued so far (ours first among them) and wake their writers.

        Writers that queue meanwhile wait; the first of them is handed the lead for the next
        batch. Each waiter is woken exactly once, by the leader that settled its row, so no
        thread has to take a lock only to find its row already done.
        """
        batch: list[_Pending] = []
        following: _Pending | None = None
        checkpoint = False
        try:
            with self._queue_lock:
                batch = self._queue[:_MAX_BATCH]
                del self._queue[:_MAX_BATCH]
            with self._lock:
                self._commit(batch)
        finally:
            with self._queue_lock:
                self._commits += 1
                checkpoint = self._commits % _CHECKPOINT_EVERY == 0
                if self._queue:
                    following = self._queue[0]
                    following.lead = True
                else:
                    self._leading = False
            if following is not None:
                following.wake.release()
            for entry in batch:
                if not entry.done:  # the leader was interrupted before its commit ended
                    entry.done = True
                    entry.error = sqlite3.OperationalError(
                        f"The write to the ledger {self.path!r} was interrupted; not stored."
                    )
                if entry.wake is not None:
                    entry.wake.release()
        if checkpoint and self.path != ":memory:":
            self._checkpoint()

    def _checkpoint(self) -> None:
        """Copy committed WAL frames into the database file, readers and writers going on.

        PASSIVE never waits for a lock: what it cannot copy now, the next checkpoint will.
        One checkpoint at a time; a writer finding one running goes on without.
        """
        if not self._checkpoint_lock.acquire(blocking=False):
            return
        try:
            if self._db is None:  # closed meanwhile
                return
            if self._checkpoint_db is None:
                self._checkpoint_db = sqlite3.connect(
                    self.path, timeout=self._busy_timeout, isolation_level=None,
                    check_same_thread=False,
                )  # fmt: skip
            self._checkpoint_db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error:
            pass  # upkeep only: every row is already committed, and the next one tries again
        finally:
            self._checkpoint_lock.release()

    def _commit(self, batch: list[_Pending]) -> None:
        """Store a batch atomically, marking which rows this batch stored.

        Each ``execute`` lets go of the GIL and must win it back from busy workers, so a lone
        row is one self-committing statement and a batch is one multi-row statement in one
        transaction. When some key of a batch was already there, that transaction is undone
        and the rows go in one by one, to learn exactly which were stored.
        """
        db = self._conn()
        try:
            if len(batch) == 1:
                batch[0].stored = db.execute(_INSERT, batch[0].values).rowcount == 1
            elif not self._transaction(db, self._insert_all, batch):
                self._transaction(db, self._insert_each, batch)
        except Exception as exc:  # every row of a failed transaction fails: none was stored
            for entry in batch:
                entry.stored = False
                entry.error = exc
        finally:
            for entry in batch:
                entry.done = True

    @staticmethod
    def _transaction(
        db: sqlite3.Connection,
        insert: Callable[[sqlite3.Connection, list[_Pending]], bool],
        batch: list[_Pending],
    ) -> bool:
        """Run ``insert`` in a write transaction; commit if it says True, else roll back."""
        db.execute("BEGIN IMMEDIATE")
        try:
            done = insert(db, batch)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT" if done else "ROLLBACK")
        return done

    @staticmethod
    def _insert_all(db: sqlite3.Connection, batch: list[_Pending]) -> bool:
        values = [value for entry in batch for value in entry.values]
        if db.execute(_insert_many(len(batch)), values).rowcount != len(batch):
            return False
        for entry in batch:
            entry.stored = True
        return True

    @staticmethod
    def _insert_each(db: sqlite3.Connection, batch: list[_Pending]) -> bool:
        for entry in batch:
            entry.stored = db.execute(_INSERT, entry.values).rowcount == 1
        return True

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
        if self._claims is not None:
            self._claims.close()
        with self._checkpoint_lock, self._lock:
            if self._checkpoint_db is not None:
                self._checkpoint_db.close()
                self._checkpoint_db = None
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
