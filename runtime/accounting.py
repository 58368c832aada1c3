"""What a run's model calls cost: tallies per phase, per role and in all.

Accounting tallies every model call per phase and per role, separating real spend
(``credits``) from what stand-in calls would have cost (``would_credits``): a rehearsal prices a
plan from the latter.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field
from typing import Any

from .reply import Reply

__all__ = ["Accounting", "Tally"]


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
        self.count(reply.cached, reply.standin, reply.credits or 0.0)

    def count(self, cached: bool, standin: bool, credits: float) -> None:
        """One answer, worth ``credits``: free if ``cached`` or a stand-in's (``standin``), else
        bought. ``add`` counts a reply so; a reader of a run's events counts its calls so."""
        self.calls += 1
        if cached:
            self.cached += 1
        elif standin:
            self.standin += 1
            self.would_credits += credits
        else:
            self.sent += 1
            self.credits += credits

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
    tools: dict[str, Tally] = field(default_factory=dict)  # "server.tool" -> its calls
    turns: dict[int, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, phase: str, role: str, worker: int, reply: Reply) -> None:
        with self._lock:
            self.total.add(reply)
            # get before setdefault: no throwaway Tally on every call
            (self.phases.get(phase) or self.phases.setdefault(phase, Tally())).add(reply)
            (self.roles.get(role) or self.roles.setdefault(role, Tally())).add(reply)
            self.turns[worker] = self.turns.get(worker, 0) + 1

    def record_tool(self, phase: str, tool: str, reply: Reply) -> None:
        """A tool call counts in the total and its phase, and per tool (not as a role)."""
        with self._lock:
            self.total.add(reply)
            (self.phases.get(phase) or self.phases.setdefault(phase, Tally())).add(reply)
            (self.tools.get(tool) or self.tools.setdefault(tool, Tally())).add(reply)

    def to_dict(self) -> dict[str, Any]:
        with self._lock:
            return {
                "total": self.total.to_dict(),
                "phases": {name: t.to_dict() for name, t in self.phases.items()},
                "roles": {name: t.to_dict() for name, t in self.roles.items()},
                "tools": {name: t.to_dict() for name, t in self.tools.items()},
                "turns": dict(self.turns),
            }
