"""What a run has done so far, read from its ``events.jsonl``: for a run without its end record.

A run writes ``meta.json`` as it starts and ``threads.json`` (and ``meta.json`` again) as it
ends; in between, and for a run killed before its end, its events are the record: every call
and every worker's start and end, one JSON line each, written as it happens. ``so_far`` reads
them into the shapes the end record has, so ``planlang show`` and ``planlang runs`` of a live
run (paused at its cap, say, while someone decides on ``planlang raise``) say what it has spent
and who its workers are. The run writes nothing more for this: the reader derives it, so there
is no second file to be half-written, and a run killed at any moment is read the same way.

The tallies are counted by ``runtime.accounting.Tally.count``, the rule the run's own
accounting counts by; a worker's prompt and messages are not in the events (only
``threads.json`` holds them, at the end).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runtime.accounting import Accounting, Tally

__all__ = ["read_events", "so_far"]

_ENDS = {"worker_done": "done", "worker_failed": "failed", "worker_cancelled": "cancelled"}


def read_events(path: Path) -> list[dict[str, Any]]:
    """The events of ``path``, in order; a line not yet whole (the run is writing it) or not a
    JSON object is passed over. None at all if there is no file."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return []
    events = []
    for line in text.splitlines(keepends=True):
        if not line.endswith("\n"):  # the last line, half written
            break
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(event, dict) and isinstance(event.get("kind"), str):
            events.append(event)
    return events


def so_far(folder: Path, meta: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``meta`` (a record without its end) with what the run's events hold so far: its
    ``accounting``, ``spent``, ``cap`` and ``counts``, and ``"from_events": true``; and its
    workers (each as ``threads.json`` has it, without prompt and messages)."""
    tallies = _Tallies()
    workers: dict[int, dict[str, Any]] = {}
    counts = {"running": 0, "done": 0, "failed": 0, "refused": 0, "cancelled": 0}
    spent, cap = 0.0, meta.get("cap")
    for e in read_events(folder / "events.jsonl"):
        kind, w = e["kind"], e.get("worker")
        if kind == "call":
            spent += tallies.call(e)
            if isinstance(w, int) and w in workers:
                worker = workers[w]
                worker["model"] = e.get("model")
                worker["turns"] = e.get("turn") or worker["turns"] + 1
                worker["credits"] += _number(e.get("credits"))
                worker["would_credits"] += _number(e.get("would_credits"))
        elif kind == "tool_call":
            spent += tallies.tool(e)
        elif kind == "budget":
            spent += _number(e.get("spent"))  # a budget shared by runs: what it had at the start
            cap = e.get("cap", cap)
        elif kind == "cap_raised" and "cap" in e:
            cap = e["cap"]
        elif not isinstance(w, int):
            continue
        elif kind == "worker_started":
            workers[w] = _worker(e, "running")
            counts["running"] += 1
        elif kind == "worker_refused":
            workers[w] = _worker(e, "refused", e.get("reason"))
            counts["refused"] += 1
        elif kind in _ENDS and w in workers:
            worker, status = workers[w], _ENDS[kind]
            if worker["status"] == "running":
                counts["running"] -= 1
                counts[status] += 1
            worker.update(status=status, error=e.get("error"))
            for key in ("turns", "credits", "would_credits"):
                if isinstance(e.get(key), int | float):
                    worker[key] = e[key]
    for worker in workers.values():
        worker["credits"] = round(worker["credits"], 9)
        worker["would_credits"] = round(worker["would_credits"], 9)
    shown = {**meta, "accounting": tallies.to_dict(), "spent": round(spent, 9), "cap": cap,
             "counts": counts, "from_events": True}  # fmt: skip
    return shown, sorted(workers.values(), key=lambda w: w["id"])


def _worker(e: dict[str, Any], status: str, error: Any = None) -> dict[str, Any]:
    return {"id": e.get("worker"), "label": e.get("label"), "role": e.get("role"), "model": None,
            "phase": e.get("phase"), "status": status, "turns": 0, "credits": 0.0,
            "would_credits": 0.0, "error": error}  # fmt: skip


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


class _Tallies(Accounting):
    """The run's accounting (``runtime.accounting.Accounting``), counted from its events."""

    def call(self, e: dict[str, Any]) -> float:
        """Count a model call (its role is its model when it has none); what it billed."""
        role = str(e.get("role") or e.get("model"))
        self._count(e, self.phases.setdefault(str(e.get("phase")), Tally()),
                    self.roles.setdefault(role, Tally()))  # fmt: skip
        worker = e.get("worker")
        if isinstance(worker, int):
            self.turns[worker] = self.turns.get(worker, 0) + 1
        return _number(e.get("credits"))

    def tool(self, e: dict[str, Any]) -> float:
        """Count a tool call: in the total, its phase and its tool; what it billed."""
        self._count(e, self.phases.setdefault(str(e.get("phase")), Tally()),
                    self.tools.setdefault(str(e.get("tool")), Tally()))  # fmt: skip
        return _number(e.get("credits"))

    def _count(self, e: dict[str, Any], *also: Tally) -> None:
        standin = bool(e.get("standin"))
        worth = _number(e.get("would_credits") if standin else e.get("credits"))
        for tally in (self.total, *also):
            tally.count(bool(e.get("cached")), standin, worth)
