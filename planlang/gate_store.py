"""Where the gate keeps its decisions: a SQLite file, or a PostgreSQL server a team shares.

The gate asks the same few things of either (store a decision, read one, list the held ones,
find the latest approval of a source under a policy, record a person's approval); only the SQL
dialect differs. Rows carry the seal of their decision (see ``planlang.gate_seal``), a
rejection included; an older SQLite file without the column gets it on first use, and its
unsealed rows are refused.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

from runtime.stores import backend

_SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS plans (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    sha256 TEXT NOT NULL,
    filename TEXT NOT NULL,
    source TEXT NOT NULL,
    policy_sha256 TEXT NOT NULL,
    price_json TEXT NOT NULL,
    price_sha256 TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('approved', 'held')),
    reasons_json TEXT NOT NULL,
    submitted REAL NOT NULL,
    decided REAL,
    decided_by TEXT,
    seal TEXT
);
CREATE INDEX IF NOT EXISTS plans_sha ON plans (sha256, policy_sha256, status);
"""
# A person's refusal of a held plan: a table of its own, so stores made before it keep working.
_REJECTIONS = """
CREATE TABLE IF NOT EXISTS {r} (
    plan_id BIGINT PRIMARY KEY,
    rejected DOUBLE PRECISION NOT NULL,
    rejected_by TEXT NOT NULL
)
"""
_HELD = "status = 'held' AND id NOT IN (SELECT plan_id FROM {r})"

COLUMNS = ("sha256", "filename", "source", "policy_sha256", "price_json", "price_sha256",
           "status", "reasons_json", "submitted", "decided", "decided_by", "seal")  # fmt: skip


class GateStore:
    """A SQLite gate store (``":memory:"`` or a file); ``open_store`` picks the backend."""

    table = "plans"
    rejections = "rejections"
    mark = "?"

    def __init__(self, location: str | Path) -> None:
        self.location = str(location)
        if self.location != ":memory:":
            Path(self.location).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.location, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA busy_timeout = 10000")
        self._db.executescript(_SQLITE_SCHEMA)
        self._db.execute(self._sql(_REJECTIONS))
        names = {row[1] for row in self._db.execute("PRAGMA table_info(plans)")}
        if "seal" not in names:  # a gate.db from before decisions were sealed
            self._db.execute("ALTER TABLE plans ADD COLUMN seal TEXT")

    def _sql(self, text: str) -> str:
        text = text.replace("{t}", self.table).replace("{r}", self.rejections)
        return text.replace("?", self.mark)

    def _execute(self, text: str, args: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        with self._lock:
            cursor = self._db.execute(self._sql(text), args)
            names = [c[0] for c in cursor.description or ()]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def insert(self, row: dict[str, Any]) -> int:
        marks = ", ".join("?" * len(COLUMNS))
        found = self._execute(f"INSERT INTO {{t}} ({', '.join(COLUMNS)}) VALUES ({marks}) "
                              "RETURNING id", tuple(row[c] for c in COLUMNS))  # fmt: skip
        return int(found[0]["id"])

    def decide(self, plan_id: int, status: str, decided: float, by: str, seal: str) -> None:
        self._execute("UPDATE {t} SET status = ?, decided = ?, decided_by = ?, seal = ? "
                      "WHERE id = ?", (status, decided, by, seal, plan_id))  # fmt: skip

    def row(self, plan_id: int) -> dict[str, Any] | None:
        """The row, with ``rejected_by`` (None unless a person rejected the plan); a rejected
        plan's status reads ``rejected``, whatever its status column says."""
        found = self._execute("SELECT {t}.*, {r}.rejected_by FROM {t} LEFT JOIN {r} ON "
                              "{r}.plan_id = {t}.id WHERE {t}.id = ?", (int(plan_id),))  # fmt: skip
        if not found:
            return None
        row = found[0]
        if row["rejected_by"] is not None:
            row["status"] = "rejected"
        return row

    def held(self) -> list[dict[str, Any]]:
        return self._execute(f"SELECT * FROM {{t}} WHERE {_HELD} ORDER BY id")

    def held_for(self, sha256: str, policy_sha256: str) -> int | None:
        """The held (not rejected) plan of this source under this policy, if there is one."""
        found = self._execute(f"SELECT id FROM {{t}} WHERE sha256 = ? AND policy_sha256 = ? AND "
                              f"{_HELD} ORDER BY id LIMIT 1", (sha256, policy_sha256))  # fmt: skip
        return int(found[0]["id"]) if found else None

    def reject(self, plan_id: int, rejected: float, by: str, seal: str) -> None:
        """Mark the plan rejected, then seal its row as rejected (the status column keeps
        ``held``: stores made before rejections keep their schema). Deleting the mark later
        leaves a row sealed as rejected that reads as held: its seal no longer verifies."""
        self._execute("INSERT INTO {r} (plan_id, rejected, rejected_by) VALUES (?, ?, ?)",
                      (int(plan_id), rejected, by))  # fmt: skip
        self._execute("UPDATE {t} SET decided = ?, decided_by = ?, seal = ? WHERE id = ?",
                      (rejected, by, seal, int(plan_id)))  # fmt: skip

    def latest_approved(self, sha256: str, policy_sha256: str) -> int | None:
        found = self._execute("SELECT id FROM {t} WHERE sha256 = ? AND policy_sha256 = ? AND "
                              "status = 'approved' AND id NOT IN (SELECT plan_id FROM {r}) "
                              "ORDER BY id DESC LIMIT 1",
                              (sha256, policy_sha256))  # fmt: skip
        return int(found[0]["id"]) if found else None

    def close(self) -> None:
        self._db.close()


class PostgresGateStore(GateStore):
    """The same store on a PostgreSQL server (table ``planlang_plans``)."""

    table = "planlang_plans"
    rejections = "planlang_rejections"
    mark = "%s"

    def __init__(self, location: str | Path) -> None:
        from runtime.pg import Server

        self.location = str(location)
        self.server = Server(self.location, max_size=2)
        self._execute(_REJECTIONS)

    def _execute(self, text: str, args: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        with self.server.connection() as conn:
            cursor = conn.execute(self._sql(text), args)
            if cursor.description is None:
                return []
            names = [c.name for c in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def close(self) -> None:
        self.server.close()


def open_store(location: str | Path) -> GateStore:
    """The gate store at ``location``: a path, ``":memory:"`` or ``postgresql://...``."""
    if backend(location) == "postgresql":
        return PostgresGateStore(location)
    return GateStore(location)
