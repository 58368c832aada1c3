"""Rehearse: run a checked plan against the free stand-in model, and time it on a virtual clock.

A rehearsal is a real run of the checked plan on ``runtime.Run``, with no ledger, no client and
the free stand-in answering every call: nothing is stored and nothing is sent. It counts calls
and what they would cost per phase and per role; ``planlang.price`` sums several up.

How long would the plan take against real models? The stand-in answers at once, so a rehearsal's
real wall time says nothing. Instead every stand-in call ticks a per-thread virtual clock by the
expected latency of one call; a fan-out (``parallel``, ``stream``) measures each thunk's virtual
duration and adds the makespan of scheduling them on ``concurrency`` slots, longest first. The
plan thread's clock at the end is the estimate: sequential calls add up, parallel ones overlap
as the real pool would let them.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from planlang.binding import HostProvider, plan_sandbox, run_host_words, run_plan
from planlang.check import CheckResult
from planlang.errors import PlanLimitError, PlanRuntimeError
from planlang.sandbox.deep_stack import deep_settings
from planlang.sandbox.limits import Limits
from planlang.standin import StandIn
from runtime import LLM, Budget, Run, RunError, Settings
from runtime.tools import tool_door

__all__ = ["Rehearsal", "VirtualClock", "rehearse"]


@dataclass
class Rehearsal:
    """What one rehearsal with one seed did."""

    seed: int
    accounting: dict[str, Any]
    workers: int
    wall_seconds: float
    problems: list[tuple[str, str, int | None]] = field(default_factory=list)
    result: Any = None
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)  # declared: price, hints


class VirtualClock:
    def __init__(self, latency: float, concurrency: int):
        self.latency = latency
        self.concurrency = concurrency
        self._by_thread: dict[int, float] = {}  # thread id -> its virtual time

    @property
    def elapsed(self) -> float:
        """This thread's virtual time."""
        return self._by_thread.get(threading.get_ident(), 0.0)

    def _set(self, seconds: float) -> None:
        self._by_thread[threading.get_ident()] = seconds

    def _add(self, seconds: float) -> None:
        self._set(self.elapsed + seconds)

    def total(self) -> float:
        """The plan's virtual time: the longest clock. Workers give theirs back after each
        thunk, so what is left is the clock of the thread that ran the plan's own code."""
        return max(self._by_thread.values(), default=0.0)

    def tick(self) -> None:
        """One model call on this thread."""
        self._add(self.latency)

    def _timed(self, thunk: Callable[[], Any], durations: list[float], i: int) -> Callable[[], Any]:
        def timed() -> Any:
            saved = self.elapsed
            self._set(0.0)
            try:
                return thunk()
            finally:
                durations[i] = self.elapsed
                self._set(saved)

        return timed

    def makespan(self, durations: list[float], slots: int) -> float:
        """Greedy list scheduling in submission order, as a thread pool runs them."""
        free = [0.0] * max(1, min(slots, len(durations) or 1))
        for d in durations:
            heapq.heappush(free, heapq.heappop(free) + d)
        return max(free) if durations else 0.0

    def parallel(
        self, fan_out: Callable[[list[Callable[[], Any]]], Any], thunks: Iterable[Any],
        nested: bool,
    ) -> Any:  # fmt: skip
        thunks = list(thunks)
        durations = [0.0] * len(thunks)
        timed = [self._timed(t, durations, i) if callable(t) else t for i, t in enumerate(thunks)]
        result = fan_out(timed)
        self._add(self.makespan(durations, 1 if nested else self.concurrency))
        return result

    def stream(
        self, fan_out: Callable[[list[Callable[[], Any]]], Iterator[Any]], thunks: Iterable[Any],
        nested: bool,
    ) -> Iterator[Any]:  # fmt: skip
        thunks = list(thunks)
        durations = [0.0] * len(thunks)
        timed = [self._timed(t, durations, i) if callable(t) else t for i, t in enumerate(thunks)]
        return _Followed(
            fan_out(timed),
            lambda: self._add(self.makespan(durations, 1 if nested else self.concurrency)),
        )


class _Followed:
    """A stream's items, then the makespan on the clock once it is used up. Not a generator:
    several plan threads may take from one stream at once."""

    def __init__(self, items: Iterator[Any], at_end: Callable[[], None]) -> None:
        self._items, self._at_end = items, at_end
        self._ended = threading.Lock()

    def __iter__(self) -> _Followed:
        return self

    def __next__(self) -> Any:
        try:
            return next(self._items)
        except StopIteration:
            if self._ended.acquire(blocking=False):  # the makespan counts once
                self._at_end()
            raise


def rehearse(
    checked: CheckResult,
    *,
    seed: int,
    settings: Settings,
    host: HostProvider | Mapping[str, Any] | None = None,
    inputs: Any = None,
    limits: Limits | None = None,
    latency: float = 2.0,
    isolation: str | None = None,
) -> Rehearsal:
    """Run the checked plan once against the stand-in seeded with ``seed``."""
    clock = VirtualClock(latency, settings.concurrency)
    llm = LLM(ledger=None, client=None, budget=Budget(None),
              standin=StandIn(seed, on_call=clock.tick), settings=settings)  # fmt: skip
    steps = (limits or Limits()).steps
    # One title for every seed: a problem that names it reads the same, and merges, across seeds.
    run = Run("rehearsal", llm=llm, settings=deep_settings(settings, steps))
    words, origins = run_host_words(run, checked.filename)
    fan_out, streamed = words["parallel"], words["stream"]
    words["parallel"] = lambda thunks: clock.parallel(fan_out, thunks, run.in_worker())
    words["stream"] = lambda thunks, then=None: clock.stream(
        lambda timed: streamed(timed, then), thunks, run.in_worker()
    )
    box = plan_sandbox(run, words, host=host, inputs=inputs, limits=limits,
                       isolation=isolation or settings.isolation)  # fmt: skip
    problems: list[tuple[str, str, int | None]] = []
    result = None

    def plan(_run: Run) -> Any:
        return run_plan(box, checked)

    try:
        result = run.run_sync(plan)
    except PlanLimitError as error:
        problems.append(("limit", f"{error.kind}: {error.message}", error.line))
    except PlanRuntimeError as error:
        problems.append(("crash", error.message, error.line))
    except RunError as error:
        problems.append(("run", f"{type(error).__name__}: {error}", None))
    for record in run.threads:
        line = origins.lines.get(record.label or "")
        if record.status == "failed":
            problems.append(("worker", record.error or "the worker failed", line))
        elif record.status == "refused":  # one problem for all: the worker number is not news
            problems.append(("runaway", f"a worker asked to start past max_agents="
                             f"{run.max_agents}", line))  # fmt: skip
    for event in run.events:  # a thunk's own failure (a bad tool call, say) leaves it None
        if event["kind"] == "thunk_failed":
            problems.append(("thunk", event["error"], event.get("line")))
    wall = clock.total()
    door = tool_door(run)
    declared = {name: {"price": spec.price, "read_only": spec.read_only,
                       "destructive": spec.destructive, "idempotent": spec.idempotent}
                for name, spec in door.declared.items()}  # fmt: skip
    door.close()
    return Rehearsal(seed, run.accounting.to_dict(), len(run.threads), wall, problems, result,
                     declared)  # fmt: skip
