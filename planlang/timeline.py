"""A recorded run as plain data: lanes, intervals, budget over time, what each phase cost.

Read from a run's folder alone (``events.jsonl``, ``threads.json``, ``meta.json``, ``plan.py``),
so the picture of a replayed run, or of a run someone sent you, is the same. Times are the
events' ``t``: seconds since the run began. Older recordings (without ``worker_running``,
``resumed``, ``budget`` or ``retry`` events) still load: what they lack is drawn as zero-length.

A worker's lane: queued (from the moment its thunk went to the pool, or it asked to start, to
the moment it got a slot), running, waiting at the budget (inside running), and how it ended:
done, failed, cancelled, or cached (done, every answer from the ledger).
"""

from __future__ import annotations

import ast
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.linear_regex import MatchTooCostly, PatternError, fullmatch

__all__ = ["Lane", "PhaseStats", "Timeline", "TimelineError", "build_timeline", "load_timeline"]


class TimelineError(ValueError):
    """The folder is not a recorded run; the message says which file and why."""


@dataclass
class Lane:
    """One worker: when it queued, ran and waited, its calls, retries and how it ended."""

    worker: int
    label: str
    role: str
    phase: str
    status: str  # done, failed, cancelled, refused, running, cached
    queued: float
    start: float
    end: float
    waits: list[tuple[float, float]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)  # t, seconds, turn, cached, credits
    retries: list[dict[str, Any]] = field(default_factory=list)  # t, turn, why, problem
    error: str | None = None
    credits: float = 0.0
    phase_index: int = -1  # which phase of Timeline.phases (a name may start several times)


@dataclass
class PhaseStats:
    """What one phase took: wall time, worker time, and the barrier's cost."""

    name: str
    start: float
    end: float
    line: int | None
    workers: int = 0
    used: float = 0.0  # worker-seconds: each worker's running time (a slot held)
    waited: float = 0.0  # worker-seconds spent waiting at the budget
    lost: float = 0.0  # slot-seconds idle while the slowest workers held the phase open
    streaming_saved: float = 0.0  # wall seconds the next phase could have filled in

    @property
    def wall(self) -> float:
        return self.end - self.start


@dataclass
class Timeline:
    meta: dict[str, Any]
    concurrency: int
    end: float
    phases: list[PhaseStats]
    lanes: list[Lane]
    budget: list[tuple[float, float, float, float | None]]  # t, spent, reserved, cap
    paused: list[tuple[float, float]]
    raises: list[dict[str, Any]]
    costs: dict[str, dict[str, dict[str, float]]]  # "phases"/"roles" -> name -> numbers
    totals: dict[str, float]
    conversations: dict[int, dict[str, Any]]
    source: str
    logs: list[dict[str, Any]]
    thunk_failures: list[dict[str, Any]] = field(default_factory=list)  # the plan's own code


def _read_json(path: Path, missing: Any) -> Any:
    """A record file, or ``missing`` when the run has not written it (still running, killed)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return missing
    except (OSError, ValueError) as error:
        raise TimelineError(f"{path}: cannot read: {error}") from None


def _read_events(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise TimelineError(f"{path}: missing; is this a run folder?") from None
    events = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except ValueError:
            if number == len(lines):  # a killed run may leave half a last line
                break
            raise TimelineError(f"{path}:{number}: not a JSON event") from None
    return events


def phase_lines(source: str) -> dict[str, int]:
    """The line of each ``phase("name")`` in the plan (f-strings match as patterns)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if name != "phase":
            continue
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            found.setdefault(arg.value, node.lineno)
        elif isinstance(arg, ast.JoinedStr):
            # a lone surrogate stays itself: linear_regex matches it as the name's own
            # a field is any text, line ends too: ECMA's "[^]", where "." stops at one
            parts = [re.escape(str(v.value)) if isinstance(v, ast.Constant) else "[^]*"
                     for v in arg.values]  # fmt: skip
            found.setdefault("re:" + "".join(parts), node.lineno)
    return found


def _line_of(name: str, lines: dict[str, int]) -> int | None:
    if name in lines:
        return lines[name]
    for pattern, line in lines.items():
        if pattern.startswith("re:"):
            try:
                if fullmatch(pattern[3:], name):
                    return line
            except (PatternError, MatchTooCostly):  # a name too long for it: no line
                continue
    return None


def load_timeline(folder: str | Path) -> Timeline:
    """Turn a run folder into a ``Timeline``; raise ``TimelineError`` when it is not one."""
    folder = Path(folder)
    if not folder.is_dir():
        raise TimelineError(f"{folder}: no such run folder")
    events = _read_events(folder / "events.jsonl")
    # a run still going, or killed, has only its events: the page draws what they hold
    unfinished = {"id": folder.name, "status": "unfinished (no meta.json yet)"}
    meta = _read_json(folder / "meta.json", unfinished)
    threads = _read_json(folder / "threads.json", [])
    plan = folder / "plan.py"
    source = plan.read_text(encoding="utf-8") if plan.exists() else ""
    return build_timeline(events, meta, threads, source)


def build_timeline(
    events: list[dict[str, Any]], meta: dict[str, Any], threads: list[dict[str, Any]], source: str
) -> Timeline:
    """The pure part of ``load_timeline``: recorded data in, a ``Timeline`` out."""
    end = max((e["t"] for e in events), default=0.0)
    started = [e for e in events if e["kind"] == "run_started"]
    concurrency = int((started[0].get("concurrency") if started else None) or 1)
    records = {t["id"]: t for t in threads}
    lanes: dict[int, Lane] = {}
    open_waits: dict[int, float] = {}
    phases: list[PhaseStats] = []
    lines = phase_lines(source)
    raises: list[dict[str, Any]] = []
    logs: list[dict[str, Any]] = []
    thunk_failures: list[dict[str, Any]] = []
    tool_calls: list[dict[str, Any]] = []
    deltas: list[tuple[float, float, float]] = []  # t, spent change, reserved change
    cap_steps: list[tuple[float, float | None]] = []
    spent0 = 0.0
    for e in events:
        kind, t = e["kind"], e["t"]
        if kind == "phase":
            if phases:
                phases[-1].end = t
            phases.append(PhaseStats(e["name"], t, end, _line_of(e["name"], lines)))
        elif kind == "worker_started":
            w = e["worker"]
            lanes[w] = Lane(w, e.get("label") or "", e.get("role") or "", e.get("phase") or "",
                            "running", t, t, end)  # fmt: skip
        elif kind == "worker_running" and e["worker"] in lanes:
            lane = lanes[e["worker"]]
            lane.queued, lane.start = min(e.get("queued_since", t), lane.start), t
        elif kind == "call" and e["worker"] in lanes:
            lane = lanes[e["worker"]]
            lane.calls.append(
                {
                    "t": t,
                    "seconds": e.get("seconds", 0.0),
                    "turn": e.get("turn"),
                    "cached": e.get("cached", False),
                    "credits": e.get("credits", 0),
                }
            )
            if not e.get("cached") and not e.get("standin"):
                amount = e.get("credits") or 0.0
                deltas.append((max(t - e.get("seconds", 0.0), lane.start), 0.0, amount))
                deltas.append((t, amount, -amount))
        elif kind == "retry" and e["worker"] in lanes:
            lanes[e["worker"]].retries.append(
                {k: e.get(k) for k in ("t", "turn", "why", "problem")}
            )
        elif kind == "paused":
            open_waits[e["worker"]] = t
        elif kind == "resumed" and e["worker"] in lanes:
            lanes[e["worker"]].waits.append((open_waits.pop(e["worker"], t), t))
        elif kind in ("worker_done", "worker_failed", "worker_cancelled") and e["worker"] in lanes:
            lane = lanes[e["worker"]]
            lane.end, lane.error, lane.credits = t, e.get("error"), e.get("credits") or 0.0
            lane.status = kind.removeprefix("worker_")
            if e["worker"] in open_waits:  # cancelled while waiting: the wait ends with it
                lane.waits.append((open_waits.pop(e["worker"]), t))
            if lane.status == "done" and lane.calls and all(c["cached"] for c in lane.calls):
                lane.status = "cached"
        elif kind == "worker_refused":
            w = e["worker"]
            lanes[w] = Lane(w, e.get("label") or "", "", "", "refused", t, t, t, error=e["reason"])
        elif kind == "budget":
            spent0 = e.get("spent") or 0.0
            cap_steps.append((t, e.get("cap")))
        elif kind == "cap_raised":
            cap_steps.append((t, e.get("cap")))
            raises.append({"t": t, "old_cap": e.get("old_cap"), "cap": e.get("cap")})
        elif kind == "log":
            logs.append({"t": t, "message": e.get("message"), "phase": e.get("phase")})
        elif kind == "tool_call":  # a tool called through the tool door: no worker, no lane
            tool_calls.append({k: e.get(k) for k in ("t", "tool", "phase", "cached", "credits")})
            if not e.get("cached") and not e.get("standin") and e.get("credits"):
                deltas.append((t, e["credits"], 0.0))
        elif kind == "thunk_failed":
            thunk_failures.append({k: e.get(k) for k in ("t", "index", "phase", "error")})
    for worker, began in open_waits.items():
        if worker in lanes:
            lanes[worker].waits.append((began, lanes[worker].end))
    if not phases or (lanes and min(ln.queued for ln in lanes.values()) < phases[0].start):
        phases.insert(0, PhaseStats("main", 0.0, phases[0].start if phases else end, None))
    ordered = sorted(lanes.values(), key=lambda ln: ln.worker)
    for lane in ordered:
        record = records.get(lane.worker) or {}
        lane.role = lane.role or record.get("role") or record.get("model") or ""
        lane.phase = lane.phase or record.get("phase") or ""  # refused workers
        lane.phase_index = _occurrence(phases, lane)
    _phase_stats(phases, ordered, concurrency)
    return Timeline(
        meta=meta, concurrency=concurrency, end=end, phases=phases, lanes=ordered,
        budget=_budget_series(deltas, cap_steps, spent0, end),
        paused=_union([w for lane in ordered for w in lane.waits]), raises=raises,
        costs=_costs(ordered, records, tool_calls), totals=_totals(ordered, meta, tool_calls),
        conversations={t["id"]: _conversation(t) for t in threads}, source=source, logs=logs,
        thunk_failures=thunk_failures,
    )  # fmt: skip


def _occurrence(phases: list[PhaseStats], lane: Lane) -> int:
    """The phase a worker asked to start in: the last start of its phase's name before it."""
    named = [i for i, p in enumerate(phases) if p.name == lane.phase]
    before = [i for i in named if phases[i].start <= lane.queued]
    return before[-1] if before else named[0] if named else -1


def _phase_stats(phases: list[PhaseStats], lanes: list[Lane], concurrency: int) -> None:
    """Worker time per phase and the barrier's cost (see docs/REPORT.md for the formulas)."""
    by_phase: dict[int, list[Lane]] = defaultdict(list)
    for lane in lanes:
        if lane.status != "refused":
            by_phase[lane.phase_index].append(lane)
    for index, stats in enumerate(phases):
        workers = by_phase.get(index, [])
        stats.workers = len(workers)
        if not workers:
            continue
        stats.used = sum(ln.end - ln.start for ln in workers)
        stats.waited = sum(b - a for ln in workers for a, b in ln.waits)
        slots = min(concurrency, len(workers))
        last_start = max(ln.start for ln in workers)
        close = max(ln.end for ln in workers)
        busy = sum(max(0.0, min(ln.end, close) - max(ln.start, last_start)) for ln in workers)
        stats.lost = max(0.0, slots * (close - last_start) - busy)
    for stats, following in zip(phases, phases[1:], strict=False):
        stats.streaming_saved = min(stats.lost, following.used) / max(concurrency, 1)


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged


def _budget_series(
    deltas: list[tuple[float, float, float]],
    cap_steps: list[tuple[float, float | None]],
    spent: float,
    end: float,
) -> list[tuple[float, float, float, float | None]]:
    """Spent, reserved (paid calls in flight) and the cap at every change."""
    changes = sorted([(t, ds, dr, False, None) for t, ds, dr in deltas]
                     + [(t, 0.0, 0.0, True, cap) for t, cap in cap_steps],
                     key=lambda c: c[0])  # fmt: skip
    cap = cap_steps[0][1] if cap_steps else None
    reserved = 0.0
    points: list[tuple[float, float, float, float | None]] = [(0.0, spent, 0.0, cap)]
    for t, ds, dr, is_cap, new_cap in changes:
        spent, reserved = spent + ds, max(0.0, reserved + dr)
        if is_cap:
            cap = new_cap
        points.append((t, round(spent, 9), round(reserved, 9), cap))
    points.append((end, round(spent, 9), 0.0, cap))
    return points


def _costs(
    lanes: list[Lane], records: dict[int, dict[str, Any]], tool_calls: list[dict[str, Any]]
) -> dict[str, Any]:
    """Per phase, role and tool: calls, paid calls and credits, ledger answers and their worth."""
    tables: dict[str, dict[str, dict[str, float]]] = {"phases": {}, "roles": {}, "tools": {}}
    empty = {"calls": 0, "paid": 0, "credits": 0.0, "cached": 0, "ledger_credits": 0.0}
    for call in tool_calls:
        for kind, key in (("phases", call["phase"] or ""), ("tools", call["tool"] or "")):
            row = tables[kind].setdefault(key, dict(empty))
            row["calls"] += 1
            row["cached" if call["cached"] else "paid"] += 1
            row["credits"] += call["credits"] or 0.0
    for lane in lanes:
        replies = (records.get(lane.worker) or {}).get("replies") or []
        for call in lane.calls:
            for kind, key in (("phases", lane.phase), ("roles", lane.role or "(default)")):
                row = tables[kind].setdefault(key, dict(empty))
                row["calls"] += 1
                if call["cached"]:
                    row["cached"] += 1
                    turn = (call.get("turn") or 0) - 1
                    if 0 <= turn < len(replies):
                        row["ledger_credits"] += replies[turn].get("credits") or 0.0
                elif call["credits"]:
                    row["paid"] += 1
                    row["credits"] += call["credits"]
                else:
                    row["paid"] += 1
    for rows in tables.values():
        for row in rows.values():
            row["credits"] = round(row["credits"], 9)
            row["ledger_credits"] = round(row["ledger_credits"], 9)
    return tables


def _totals(
    lanes: list[Lane], meta: dict[str, Any], tool_calls: list[dict[str, Any]]
) -> dict[str, float]:
    statuses = [lane.status for lane in lanes]
    calls = [c for lane in lanes for c in lane.calls] + tool_calls  # as the accounting counts
    return {
        "workers": len(lanes),
        "done": statuses.count("done") + statuses.count("cached"),
        "failed": statuses.count("failed"),
        "cached_workers": statuses.count("cached"),
        "refused": statuses.count("refused"),
        "cancelled": statuses.count("cancelled"),
        "calls": len(calls),
        "cached": sum(1 for c in calls if c["cached"]),
        "credits": round(sum(c["credits"] or 0.0 for c in calls), 9),
        "recorded_credits": (meta.get("accounting") or {}).get("total", {}).get("credits", 0.0),
    }


def _conversation(record: dict[str, Any]) -> dict[str, Any]:
    """One worker's whole conversation, the way a person reads it."""
    return {
        "label": record.get("label"),
        "role": record.get("role"),
        "model": record.get("model"),
        "status": record.get("status"),
        "error": record.get("error"),
        "messages": [
            [m.get("role", ""), str(m.get("content", ""))] for m in record.get("messages") or []
        ],  # fmt: skip
        "replies": [
            {k: r.get(k) for k in ("cached", "billed", "credits", "seconds")}
            for r in record.get("replies") or []
        ],  # fmt: skip
    }
