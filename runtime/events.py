"""What a run remembers: an ordered event stream and its accounting.

Events are plain dicts with a sequence number and seconds since the run started, kept in
memory and, when a path is given, appended as JSON lines (line-buffered, so a killed run still
leaves every event it emitted). Accounting tallies every model call per phase and per role,
separating real spend (``credits``) from what stand-in calls would have cost
(``would_credits``): a rehearsal prices a plan from the latter.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .reply import Reply

_monotonic_ns = time.monotonic_ns


class EventLog:
    """An ordered, thread-safe event stream, optionally mirrored to a JSON-lines file."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.events: list[dict[str, Any]] = []
        self.path = None if path is None else Path(path)
        self._lock = threading.Lock()
        self._t0 = time.monotonic_ns()
        self._file: IO[str] | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8", buffering=1)

    def emit(self, kind: str, **fields: Any) -> dict[str, Any]:
        with self._lock:
            event = {
                "seq": len(self.events) + 1,
                # whole microseconds, in integers: round(x, 6) costs twice as much per event
                "t": (_monotonic_ns() - self._t0) // 1000 / 1e6,
                "kind": kind,
                **fields,
            }
            self.events.append(event)
            if self._file is not None:
                self._file.write(json.dumps(event, ensure_ascii=False, default=str) + "\n")
            return event

    def t_of(self, monotonic_ns: int) -> float:
        """A ``time.monotonic_ns()`` reading in this log's ``t`` (seconds since it began)."""
        return (monotonic_ns - self._t0) // 1000 / 1e6

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


@dataclass(slots=True)
class Tally:
    """Calls and credits of one phase, one role, or the whole run."""

    calls: int = 0  # every answer a worker got, however it was obtained
    sent: int = 0  # answers bought from the client
    cached: int = 0  # ledger hits (free)
    standin: int = 0  # stand-in answers (free)
    credits: float = 0.0  # real spend: what sent calls billed
    would_credits: float = 0.0  # what the stand-in calls would have cost at the role's price

    def add(self, reply: Reply) -> None:
        self.calls += 1
        if reply.cached:
            self.cached += 1
        elif reply.standin:
            self.standin += 1
            self.would_credits += reply.credits or 0.0
        else:
            self.sent += 1
            self.credits += reply.credits or 0.0

    def to_dict(self) -> dict[str, Any]:
        fields = dataclasses.asdict(self)
        # sums of float prices drift (0.2 * 40 = 8.000000000000004); nano-credits are exact
        fields["credits"] = round(self.credits, 9)
        fields["would_credits"] = round(self.would_credits, 9)
        return fields


@dataclass
class Accounting:
    """Per-phase, per-role and total tallies, plus turns per worker."""

    total: Tally = field(default_factory=Tally)
    phases: dict[str, Tally] = field(default_factory=dict)
    roles: dict[str, Tally] = field(default_factory=dict)
    turns: dict[int, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, phase: str, role: str, worker: int, reply: Reply) -> None:
        with self._lock:
            self.total.add(reply)
            # get before setdefault: no throwaway Tally on every call
            (self.phases.get(phase) or self.phases.setdefault(phase, Tally())).add(reply)
            (self.roles.get(role) or self.roles.setdefault(role, Tally())).add(reply)
            self.turns[worker] = self.turns.get(worker, 0) + 1

    def to_dict(self) -> dict[str, Any]:
        with self._lock:
            return {
                "total": self.total.to_dict(),
                "phases": {name: t.to_dict() for name, t in self.phases.items()},
                "roles": {name: t.to_dict() for name, t in self.roles.items()},
                "turns": dict(self.turns),
            }
