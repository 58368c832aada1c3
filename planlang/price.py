"""The price of a plan: its rehearsals (``planlang.rehearse``) summed up per phase and role.

Several rehearsals with different seeds show the spread (min / median / max); the hard ceiling
(``max_agents`` x turns per worker x the dearest price) bounds what the plan could spend whatever
the models answer, so an approval never rests on samples alone.

This module is light to import (``planlang.price`` is part of the top-level API, and
``planlang check`` must not load the runtime): the rehearsals, and with them the runtime, are
imported when a plan is priced.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from planlang.check import CheckResult, check
from planlang.errors import PlanRefused
from planlang.isolation.mode import resolve_mode
from planlang.sandbox.limits import Limits
from planlang.tool_reach import reachable_tools

if TYPE_CHECKING:
    from planlang.binding import HostProvider
    from planlang.rehearse import Rehearsal
    from runtime import Settings

__all__ = ["PriceProblem", "PriceReport", "Spread", "price"]


@dataclass(frozen=True)
class Spread:
    """min / median / max of one quantity over the rehearsals."""

    min: float
    median: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        values = list(values) or [0.0]
        return cls(min(values), statistics.median(values), max(values))


@dataclass(frozen=True)
class PriceProblem:
    """Something a rehearsal met: a crash, a limit, a failing worker, a runaway."""

    kind: str  # crash, limit, worker, runaway, run, thunk (a fanned-out function that failed)
    message: str
    line: int | None
    seeds: tuple[int, ...]
    count: int = 1  # how often the most affected rehearsal met it (200 refused workers: 200)

    def render(self, filename: str) -> str:
        where = f"{filename}:{self.line}" if self.line else filename
        seeds = ",".join(map(str, self.seeds))
        times = f" ({self.count} times)" if self.count > 1 else ""
        return f"{where}: {self.kind}: {self.message}{times} (seeds {seeds})"


@dataclass
class PriceReport:
    """The price of a plan: per phase, per role, the total, the ceiling and the problems."""

    filename: str
    sha256: str
    seeds: tuple[int, ...]
    phases: dict[str, dict[str, Spread]]
    roles: dict[str, dict[str, Spread]]
    total: dict[str, Spread]
    ceiling: float
    ceiling_basis: dict[str, float]
    wall_seconds: Spread
    problems: list[PriceProblem]
    rehearsals: list[Rehearsal] = field(repr=False, default_factory=list)
    # Tool calls per "server.tool" (MCP, docs/MCP.md) and what each declared tool promises.
    tools: dict[str, dict[str, Spread]] = field(default_factory=dict)
    tool_hints: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Declared tools the plan's code names, called in a rehearsal or not (planlang.tool_reach).
    tools_named: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def tool_writes(self) -> int:
        """The most calls one rehearsal made of tools whose annotations lack readOnlyHint."""
        writes = [sum(t["calls"] for name, t in r.accounting.get("tools", {}).items()
                      if not self.tool_hints.get(name, {}).get("read_only", False))
                  for r in self.rehearsals]  # fmt: skip
        return max(writes, default=0)

    def destructive_tools(self) -> list[str]:
        """The destructiveHint tools some rehearsal called, or the plan's code names."""
        called = {name for name, spread in self.tools.items() if spread["calls"].max > 0}
        return sorted(name for name in called | set(self.tools_named)
                      if self.tool_hints.get(name, {}).get("destructive", True))  # fmt: skip

    def unrehearsed_writes(self) -> list[str]:
        """Tools that are not read-only which the plan's code names and no rehearsal called:
        how often a run calls them is not known."""
        called = {name for name, spread in self.tools.items() if spread["calls"].max > 0}
        return sorted(name for name in self.tools_named if name not in called
                      and not self.tool_hints.get(name, {}).get("read_only", False))  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        # Without the rehearsals: asdict copies without a memo, so a rehearsal's result made of
        # cycles or shared structure would never finish copying, and the report has no results.
        data = asdict(replace(self, rehearsals=[]))
        data.pop("rehearsals")
        data["ok"] = self.ok
        return data


def price(
    source: str | CheckResult,
    *,
    seeds: int | Sequence[int] = 5,
    settings: Settings | None = None,
    host: HostProvider | Mapping[str, Any] | None = None,
    inputs: Any = None,
    limits: Limits | None = None,
    latency: float = 2.0,
    filename: str = "plan.py",
    isolation: str | None = None,
) -> PriceReport:
    """Check ``source``, rehearse it once per seed, and report its price.

    Raises ``PlanRefused`` when the check says no; everything met while rehearsing is in the
    report's ``problems``, with the plan's line. Rehearsals run the plan before any approval,
    so they run under process isolation unless ``isolation`` (or ``settings.isolation``) says
    ``"inprocess"``.
    """
    from planlang.rehearse import rehearse
    from runtime import Settings

    checked = check(source, filename) if isinstance(source, str) else source
    if not checked.ok:
        raise PlanRefused(checked.problems, filename=checked.filename)
    settings = settings or Settings()
    seed_list = tuple(range(seeds)) if isinstance(seeds, int) else tuple(seeds)
    if not seed_list:
        raise ValueError("price() needs at least one seed.")
    mode = resolve_mode(isolation or settings.isolation)

    def one(seed: int) -> Rehearsal:
        return rehearse(checked, seed=seed, settings=settings, host=host, inputs=inputs,
                        limits=limits, latency=latency, isolation=mode)  # fmt: skip

    remote = None
    if mode == "process" and not host and isinstance(source, str):
        remote = _remote_jobs(source, checked.filename, settings, inputs, limits, latency)
    rehearsals = _rehearse_all(one, seed_list, parallel=mode == "process", remote=remote)
    turns = 1 + settings.max_repair_turns + settings.max_check_retries
    hints = {name: spec for r in rehearsals for name, spec in r.tools.items()}
    dearest_tool = max((spec["price"] for spec in hints.values()), default=0.0)
    tool_basis = {"max_tool_calls": settings.max_tool_calls, "dearest_tool_price": dearest_tool}
    called = sorted({name for r in rehearsals for name in r.accounting.get("tools", {})})
    return PriceReport(
        filename=checked.filename,
        sha256=checked.sha256,
        seeds=seed_list,
        phases=_spreads(rehearsals, "phases"),
        roles=_spreads(rehearsals, "roles"),
        total=_measures([r.accounting["total"] for r in rehearsals]),
        ceiling=settings.max_agents * turns * settings.dearest_price
        + (settings.max_tool_calls * dearest_tool if dearest_tool else 0.0),
        ceiling_basis={
            "max_agents": settings.max_agents,
            "turns_per_worker": turns,
            "dearest_price": settings.dearest_price,
            **(tool_basis if dearest_tool else {}),
        },
        wall_seconds=Spread.of([r.wall_seconds for r in rehearsals]),
        problems=_merge_problems(rehearsals),
        rehearsals=rehearsals,
        tools={
            name: _measures([r.accounting.get("tools", {}).get(name, {}) for r in rehearsals])
            for name in called
        },
        tool_hints=hints,
        tools_named=reachable_tools(checked.code, hints),
    )


# Rehearsals at once under process isolation: each plan runs in a child of the default pool,
# which keeps two ready (this machine's cores); more at once would wait for forks. Beside them,
# a host process of its own takes seeds too where a price can be rebuilt there (no host words
# of the embedder's), once a rehearsal here took long: ``planlang.rehearsal_hosts``; 0 turns
# that off.
PARALLEL_REHEARSALS = 2
REHEARSAL_HOSTS = 1


def _remote_jobs(
    source: str, filename: str, settings: Settings, inputs: Any, limits: Limits | None,
    latency: float,
) -> Callable[[int], dict[str, Any]] | None:  # fmt: skip
    """What a rehearsal host needs for each seed (``rehearsal_hosts``), or None when this
    price cannot be rebuilt there: its inputs are more than plain data (a ``HostObject``, a
    function, an embedder's class: the embedder's code, which runs only in its own process),
    or its settings do not pickle."""
    import pickle

    if not _plain_data(inputs):
        return None
    # a rehearsal sends nothing: the endpoint's key and address stay here
    sent = settings.model_copy(update={"api_key": None, "base_url": None})
    try:
        pickle.dumps((sent, inputs, limits))
    except Exception:  # noqa: BLE001 - anything that does not pickle is rehearsed here
        return None

    def job(seed: int) -> dict[str, Any]:
        return {"source": source, "filename": filename, "seed": seed, "settings": sent,
                "inputs": inputs, "limits": limits, "latency": latency}  # fmt: skip

    return job


_PLAIN_SCALARS = (str, int, float, bool, type(None), bytes)
_PLAIN_CONTAINERS = (list, tuple, dict, set, frozenset)


def _plain_data(value: Any) -> bool:
    """Whether ``value`` is made of the builtin plain types only (exactly: no subclasses),
    walked without recursion, each shared part once."""
    seen: set[int] = set()
    todo = [value]
    while todo:
        item = todo.pop()
        kind = type(item)
        if kind in _PLAIN_SCALARS:
            continue
        if kind not in _PLAIN_CONTAINERS:
            return False
        if id(item) in seen:
            continue
        seen.add(id(item))
        todo.extend(item if kind is not dict else [*item.keys(), *item.values()])
    return True


def _rehearse_all(
    one: Callable[[int], Rehearsal],
    seeds: Sequence[int],
    *,
    parallel: bool,
    remote: Callable[[int], dict[str, Any]] | None = None,
) -> list[Rehearsal]:
    """One rehearsal per seed, in the order of the seeds. Under process isolation a few run
    at once: each has its own seed, stand-in, run and child process, and the host's side of
    one waits on its child's pipe while the other's works; ``remote`` (a seed's job for a
    rehearsal host) lets a host process of its own take seeds as well. In one process they
    would only contend for the interpreter, so there they run one after another. Every seed
    is rehearsed; the first error in the order of the seeds is raised, as before."""
    if not parallel or len(seeds) < 2:
        return [one(seed) for seed in seeds]
    import threading
    import time

    from planlang import rehearsal_hosts

    results: list[Rehearsal | None] = [None] * len(seeds)
    errors: dict[int, BaseException] = {}
    taken = iter(range(len(seeds)))
    lock = threading.Lock()
    left = [len(seeds)]  # seeds no thread has taken yet
    threads: list[threading.Thread] = []
    served: set[int] = set()  # the hosts with a thread of this price's

    def take() -> int | None:
        with lock:
            index = next(taken, None)
            if index is not None:
                left[0] -= 1
            return index

    def start(target: Callable[..., None], *args: Any) -> None:
        with lock:
            thread = threading.Thread(target=target, args=args,
                                      name=f"planlang-rehearsal-{len(threads)}")  # fmt: skip
            threads.append(thread)
        thread.start()

    def attach(hosts: list[rehearsal_hosts.RehearsalHost]) -> None:
        for host in hosts[:REHEARSAL_HOSTS]:
            with lock:
                new = id(host) not in served and left[0] > 0
                served.add(id(host))
            if new:
                start(hosted, host)

    def here(index: int) -> None:
        began = time.monotonic()
        try:
            results[index] = one(seeds[index])
        except BaseException as error:  # noqa: BLE001 - raised in order once all are done
            errors[index] = error
        took = time.monotonic() - began
        if remote is not None and REHEARSAL_HOSTS and took > rehearsal_hosts.START_AFTER:
            attach(rehearsal_hosts.start_hosts())  # for the seeds left, and prices to come

    def local() -> None:
        while (index := take()) is not None:
            here(index)

    def hosted(host: rehearsal_hosts.RehearsalHost) -> None:
        assert remote is not None
        while not host.ready.wait(0.02):  # warming: the seeds go on here meanwhile
            if not left[0]:
                return
        while (index := take()) is not None:
            try:
                results[index] = host.rehearse(remote(seeds[index]))
            except Exception:  # noqa: BLE001 - HostGone, or anything else: done here, as before
                here(index)  # what it could not do (an error, say) is done here, as before

    for _ in range(min(PARALLEL_REHEARSALS, len(seeds))):
        start(local)
    if remote is not None:
        attach(rehearsal_hosts.running_hosts())
    joined = 0
    while joined < len(threads):  # a host started meanwhile adds its thread
        threads[joined].join()
        joined += 1
    if errors:
        raise errors[min(errors)]
    return results  # type: ignore[return-value]


def _measures(tallies: Sequence[Mapping[str, Any]]) -> dict[str, Spread]:
    return {
        "calls": Spread.of([t.get("calls", 0) for t in tallies]),
        "credits": Spread.of([t.get("would_credits", 0.0) for t in tallies]),
    }


def _spreads(rehearsals: Sequence[Rehearsal], key: str) -> dict[str, dict[str, Spread]]:
    names = sorted({name for r in rehearsals for name in r.accounting[key]})
    empty: dict[str, Any] = {"calls": 0, "would_credits": 0.0}
    return {
        name: _measures([r.accounting[key].get(name, empty) for r in rehearsals]) for name in names
    }


def _merge_problems(rehearsals: Sequence[Rehearsal]) -> list[PriceProblem]:
    """One problem per distinct (kind, message, line), with its seeds and its count."""
    seen: dict[tuple[str, str, int | None], list[int]] = {}
    most: Counter[tuple[str, str, int | None]] = Counter()
    for rehearsal in rehearsals:
        here = Counter(rehearsal.problems)
        for problem, times in here.items():
            seen.setdefault(problem, []).append(rehearsal.seed)
            most[problem] = max(most[problem], times)
    problems = [
        PriceProblem(kind, message, line, tuple(dict.fromkeys(seeds)), most[kind, message, line])
        for (kind, message, line), seeds in seen.items()
    ]  # in line order, as check lists them; a problem without a line last, as found
    return sorted(problems, key=lambda p: p.line if p.line is not None else float("inf"))
