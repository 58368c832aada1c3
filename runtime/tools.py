"""The front door for tool calls: a tool call passes the ledger and the budget as a model call does.

The runtime knows nothing of MCP: a caller (planlang's MCP host words) hands in a ``ToolSpec``,
the arguments, a ``send`` thunk that makes the call and a ``standin`` thunk that answers for
free. The order is the contract, because it decides what happens to the world:

1. ledger hit      -> the stored result; nothing is sent
2. replay mode     -> ``ToolCacheMiss``; nothing is sent
3. stand-in        -> when the run's front door has one (a rehearsal): ``standin()``, free
4. in flight before -> an earlier run stopped during this very call: sent again only when the
                      tool says ``idempotentHint``, otherwise ``OutcomeUnknown`` ends the run
5. budget admission (the tool's price), then the call is marked in flight (committed)
6. ``send()``      -> a ``ToolError`` (the tool said no) clears the mark and is the plan's error;
                      anything else leaves the mark: the outcome is unknown
7. the result is committed to the ledger, the mark cleared, the price settled; then returned

The fingerprint is sha256 over canonical JSON of server, tool, arguments and an index that
counts identical calls earlier in the same run, so calling ``append(line="x")`` twice is two
calls, and a rerun makes neither again. In-flight marks live in a table of their own in the
ledger's SQLite file (``tool_calls_in_flight``).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .canonical import dumps
from .claims import setting_up
from .errors import CacheMiss, OutcomeUnknown, RunError, ToolError
from .reply import Reply
from .stores import backend

if TYPE_CHECKING:
    from .run import Run

__all__ = ["ToolCacheMiss", "ToolDoor", "ToolSpec", "forget_in_flight", "tool_door", "tool_key"]


@dataclass(frozen=True)
class ToolSpec:
    """One tool as the door sees it: its name, price and what its annotations promise.

    Defaults are MCP's own: a tool is not read-only, may be destructive, is not idempotent.
    """

    server: str
    tool: str
    price: float = 0.0
    read_only: bool = False
    destructive: bool = True
    idempotent: bool = False

    @property
    def name(self) -> str:
        return f"{self.server}.{self.tool}"


class ToolCacheMiss(CacheMiss):
    """Replay mode met a tool call the ledger does not hold; nothing was sent."""

    def __init__(self, key: str, name: str) -> None:
        self.key = key
        self.model = name
        RunError.__init__(
            self,
            f"Replay mode has no stored result for the tool call {name} (fingerprint "
            f"{key[:16]}...); nothing was sent.",
        )


class ToolCallsSpent(RunError):
    """The run asked for more tool calls than ``Settings.max_tool_calls``."""


def tool_key(server: str, tool: str, arguments: Any, index: int) -> str:
    """sha256 over canonical JSON of exactly what was called, and which identical call it is."""
    text = dumps({"server": server, "tool": tool, "arguments": arguments, "index": index})
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_IN_FLIGHT = """
CREATE TABLE IF NOT EXISTS tool_calls_in_flight (
    key TEXT PRIMARY KEY, name TEXT NOT NULL, arguments TEXT NOT NULL, idx INTEGER NOT NULL,
    started REAL NOT NULL
)
"""


class _Marks:
    """In-flight marks: a SQLite table beside the ledger's answers (a dict without a file)."""

    def __init__(self, path: str | None) -> None:
        self._lock = threading.Lock()
        self._memory: dict[str, tuple[str, str, int]] = {}
        self._db: sqlite3.Connection | None = None
        if path is not None and path != ":memory:":
            self._db = sqlite3.connect(path, timeout=30, isolation_level=None,
                                       check_same_thread=False)  # fmt: skip
            try:
                self._db.execute("PRAGMA busy_timeout = 30000")
                with setting_up(path, 30.0):  # not beside another process's Ledger making it
                    self._db.execute(_IN_FLIGHT)
            except BaseException:
                self._db.close()
                raise

    def get(self, key: str) -> bool:
        with self._lock:
            if self._db is None:
                return key in self._memory
            row = self._db.execute("SELECT 1 FROM tool_calls_in_flight WHERE key = ?", (key,))
            return row.fetchone() is not None

    def mark(self, key: str, name: str, arguments: Any, index: int) -> None:
        with self._lock:
            if self._db is None:
                self._memory[key] = (name, dumps(arguments), index)
                return
            self._db.execute("INSERT OR REPLACE INTO tool_calls_in_flight VALUES (?, ?, ?, ?, ?)",
                             (key, name, dumps(arguments), index, time.time()))  # fmt: skip

    def clear(self, key: str) -> None:
        with self._lock:
            if self._db is None:
                self._memory.pop(key, None)
                return
            self._db.execute("DELETE FROM tool_calls_in_flight WHERE key = ?", (key,))

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def forget_in_flight(ledger_path: str | Path) -> list[str]:
    """Clear every in-flight mark of a ledger file, after a person checked their outcomes.

    Returns the names of the calls cleared; a rerun sends them again. A path with no file is
    FileNotFoundError (it made an empty ledger there before).
    """
    if not Path(ledger_path).is_file():
        raise FileNotFoundError(f"No ledger at {str(ledger_path)!r}.")
    db = sqlite3.connect(str(ledger_path), timeout=30, isolation_level=None)
    try:
        # all of it held: a Ledger making the file beside its writes would be refused at once
        with setting_up(str(ledger_path), 30.0):
            db.execute(_IN_FLIGHT)
            db.execute("BEGIN IMMEDIATE")  # the names read are the marks cleared
            names = [row[0] for row in db.execute("SELECT name FROM tool_calls_in_flight")]
            db.execute("DELETE FROM tool_calls_in_flight")
            db.execute("COMMIT")
        return names
    finally:
        db.close()


class ToolDoor:
    """One run's tool calls: their fingerprints, in-flight marks, budget and accounting."""

    def __init__(self, run: Run) -> None:
        # Weakly: the door is the value of its run's key in ``_doors``, and a value that held
        # its key would keep both alive for good (every rehearsal's run, with its workers).
        self._run_ref = weakref.ref(run)
        path = getattr(run.llm.ledger, "path", None)
        # In-flight marks sit beside a SQLite ledger; with a PostgreSQL one they are kept in
        # memory only (docs/MCP.md, known limits).
        self._marks = _Marks(path if isinstance(path, str) and backend(path) == "sqlite" else None)
        self._lock = threading.Lock()
        self._seen: dict[str, int] = {}  # identical calls so far, by what was called
        self._calls = 0
        self.declared: dict[str, ToolSpec] = {}
        # Calls of tools that are not read-only this run may send: set by whoever approved the
        # run under such a bound (planlang's gate, ``max_tool_writes``); None: no bound.
        self.max_writes: int | None = None
        self._writes = 0

    @property
    def _run(self) -> Run:
        run = self._run_ref()
        if run is None:  # only a door kept past its run could ask
            raise RunError("The run of this tool door has ended.")
        return run

    def cancelled(self) -> bool:
        """Was the run cancelled? (A long call may stop waiting; its outcome is then unknown.)"""
        return self._run._cancelled.is_set()

    def declare(self, spec: ToolSpec) -> None:
        """Say a tool exists (called or not): prices and promises feed the price report."""
        with self._lock:
            self.declared[spec.name] = spec

    def call(
        self,
        spec: ToolSpec,
        arguments: dict[str, Any],
        *,
        send: Callable[[], Any],
        standin: Callable[[], Any],
    ) -> Any:
        """Make (or recall) one tool call in the documented order; return its result."""
        run, llm = self._run, self._run.llm
        run._check_open()
        what = dumps([spec.server, spec.tool, arguments])
        with self._lock:
            index = self._seen.get(what, 0)
            self._seen[what] = index + 1
            self._calls += 1
            calls = self._calls
        limit = run.settings.max_tool_calls
        if calls > limit:
            raise ToolCallsSpent(f"The run asked for tool call {calls}, past max_tool_calls="
                                 f"{limit}; {spec.name} was not sent.")  # fmt: skip
        key = tool_key(spec.server, spec.tool, arguments, index)
        if llm.ledger is not None:
            stored = llm.ledger.get(key)
            if stored is not None:
                self._record(spec, index, stored.replace(cached=True, standin=False))
                return stored.data
        if llm.mode == "replay":
            raise ToolCacheMiss(key, spec.name)
        if llm.standin is not None:
            value = standin()
            self._record(spec, index, _reply(spec, value, index, standin=True))
            return value
        if self._marks.get(key) and not spec.idempotent:
            raise OutcomeUnknown(spec.name, arguments, index)
        if not spec.read_only and self.max_writes is not None:
            with self._lock:
                self._writes += 1
                writes = self._writes
            if writes > self.max_writes:
                raise ToolCallsSpent(f"The run asked for write {writes} of a tool that is not "
                                     f"read-only, past max_tool_writes={self.max_writes} it "
                                     f"was approved under; {spec.name} was not sent.")  # fmt: skip
        reservation = llm.budget.admit(spec.price, stop=run._cancelled.is_set)
        try:
            self._marks.mark(key, spec.name, arguments, index)
            value = send()
        except ToolError:
            self._marks.clear(key)  # the tool answered: the outcome is known, nothing stored
            llm.budget.release(reservation)
            raise
        except BaseException:
            llm.budget.release(reservation)  # the mark stays: whether it took effect is unknown
            raise
        reply = _reply(spec, value, index, standin=False)
        try:
            if llm.ledger is not None:
                llm.ledger.put(key, reply)
            self._marks.clear(key)
        finally:
            llm.budget.settle(reservation, spec.price)
        self._record(spec, index, reply)
        return value

    def _record(self, spec: ToolSpec, index: int, reply: Reply) -> None:
        run = self._run
        run.accounting.record_tool(run.phase_name, spec.name, reply)
        run.log_events.emit(
            "tool_call", tool=spec.name, index=index, phase=run.phase_name, cached=reply.cached,
            standin=reply.standin, credits=reply.billed,
            would_credits=reply.credits if reply.standin else 0.0,
        )  # fmt: skip

    def close(self) -> None:
        self._marks.close()


def _reply(spec: ToolSpec, value: Any, index: int, *, standin: bool) -> Reply:
    text = value if isinstance(value, str) else dumps(value)
    return Reply(text=text, data=value, credits=spec.price, standin=standin, model=spec.name,
                 role="tool", sample=index)  # fmt: skip


_doors: weakref.WeakKeyDictionary[Run, ToolDoor] = weakref.WeakKeyDictionary()
_doors_lock = threading.Lock()


def tool_door(run: Run) -> ToolDoor:
    """The tool door of ``run`` (made on first use; one per run)."""
    with _doors_lock:
        door = _doors.get(run)
        if door is None:
            door = _doors[run] = ToolDoor(run)
        return door
