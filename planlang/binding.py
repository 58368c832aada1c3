"""The host words a plan gets when it runs on a ``runtime.Run``, and its sandbox there.

``agent``, ``parallel``, ``stream``, ``phase`` and ``log`` are the run's own methods, seen
through the sandbox (so their results come back as plain data). Each worker is also tagged with
the plan line that asked for it, so a rehearsal can say which line a failing worker came from.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from planlang.check import CheckResult
from planlang.errors import PlanError, PlanRuntimeError
from planlang.isolation.mode import calling_line
from planlang.isolation.wire import plan_line
from planlang.sandbox.inprocess import Sandbox, current_meter, set_current_meter
from planlang.sandbox.limits import Limits
from planlang.sandbox.walks import text_size
from planlang.sandbox.wall import HostWord
from runtime import CacheMiss, FanOutDeadlock, Run, RunCancelled, RunError
from runtime.json_schema import on_steps

__all__ = ["HostProvider", "WorkerOrigins", "plan_sandbox", "run_host_words", "run_plan"]

# Builds the embedder's host words for one run (the audit kit's words call run.agent).
HostProvider = Callable[[Run], Mapping[str, Any]]


class WorkerOrigins:
    """Which plan line asked for each worker label (thread-safe)."""

    def __init__(self, filename: str):
        self.filename = filename
        self.lines: dict[str, int] = {}
        self._lock = threading.Lock()

    def caller_line(self) -> int | None:
        """The innermost plan line on the calling thread's stack; in a host call served to a
        plan's process, the line it sent (the plan's frames are there: this thread's stack
        holds only the host's, so it is not walked)."""
        sent = calling_line()
        if sent is not None:
            return sent
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_filename == self.filename:
                return frame.f_lineno
            frame = frame.f_back  # type: ignore[assignment]
        return None

    def label_for(self, label: str | None) -> str:
        if label is not None and not isinstance(label, str):
            return label  # not text: the run fails its worker, saying so
        line = self.caller_line()
        name = label if label is not None else f"line {line}" if line else "plan"
        if line is not None:
            with self._lock:
                self.lines.setdefault(name, line)
        return name


def run_host_words(run: Run, filename: str = "plan.py") -> tuple[dict[str, Any], WorkerOrigins]:
    """The plan's view of ``run``: the five host words, and where each worker came from."""
    origins = WorkerOrigins(filename)
    kept = _Kept()

    def agent(
        prompt: str,
        schema: dict[str, Any] | None = None,
        model: str | None = None,
        label: str | None = None,
        system: str | None = None,
        data: Any = None,
        sample: int = 0,
        check: Callable[[Any], Any] | None = None,
    ) -> Any:
        kept.add(prompt, schema, model, label, system, data)  # every text a worker keeps
        try:
            return run.agent(
                prompt,
                schema=schema,
                model=model,
                label=origins.label_for(label),
                system=system,
                data=data,
                sample=sample,
                check=check,
            )
        except CacheMiss as miss:  # it ends the run: say which plan line asked (newuser24)
            if getattr(miss, "plan_line", None) is None:
                miss.plan_line = (origins.filename, origins.caller_line())  # type: ignore[attr-defined]
            raise

    def parallel(thunks: Iterable[Callable[[], Any]]) -> list[Any]:
        try:
            return run.parallel(_metered(thunks, origins))
        except _PlanEnded as ended:
            raise ended.error.with_traceback(None) from None  # one error, many threads

    def stream(
        thunks: Iterable[Callable[[], Any]], then: Callable[[Any], Any] | None = None
    ) -> Iterator[tuple[int, Any]]:
        meter = current_meter()  # its second stage too works for the plan (the stand-in, _Kept)
        staged = then if then is None or meter is None else _with_meter(meter, then)
        return _Located(iter(run.stream(_metered(thunks, origins), staged)), origins)

    def phase(name: str) -> None:
        kept.add(name)
        run.phase(name)

    def log(message: str) -> None:
        kept.add(message)
        run.log(message)

    for word in (agent, parallel, stream):  # a TypeError names it as the plan calls it
        word.__qualname__ = word.__name__
    words: dict[str, Any] = {
        "agent": agent,
        "parallel": parallel,
        "stream": stream,
        # Their arguments become text as the plan's own str makes it: priced, in the plan.
        "phase": HostWord(phase, text=True),
        "log": HostWord(log, text=True),
    }
    return words, origins


class _Kept:
    """The text a run keeps for its plan (log messages, phase names, and each worker's
    prompt, schema, model, label, system text and data: its events and worker records), held
    to the plan's memory limit. Under process isolation each is a copy in the host, which no
    meter of the plan's process sees: a loop of 1 MB ``log`` calls grew the host by 230 MB a
    second for a plan of 256 MiB (red team 21). A text counts the bytes it takes (a character
    of an emoji is four), not its characters (review 23)."""

    def __init__(self) -> None:
        self.chars = 0
        self._lock = threading.Lock()

    def add(self, *values: object) -> None:
        """Count what the run keeps of ``values`` (their text: a worker's record holds its
        prompt, label, system text, data and schema as the messages it sent)."""
        meter = current_meter()
        if meter is None:
            return
        room = meter.memory_cap - self.chars + 1
        size = sum(sys.getsizeof(v) if type(v) is str else 0 if v is None
                   else text_size(v, room) for v in values)  # fmt: skip
        with self._lock:
            self.chars += size
            chars = self.chars
        if chars > meter.memory_cap:
            meter.trip("memory", f"The run keeps {chars / 2**20:,.1f} MiB of the plan's text "
                       "(log messages, phase names, workers' prompts and data), past its limit "
                       f"of {meter.limits.memory_mb} MiB.")  # fmt: skip


def _metered(
    thunks: Iterable[Callable[[], Any]], origins: WorkerOrigins
) -> Iterable[Callable[[], Any]]:
    """The thunks, each run with its plan's meter as ``current_meter()`` on the runtime's
    worker thread that runs it: the host words it calls there (the stand-in's deadline) see
    the plan they work for, as on the plan's own thread. Lazy, as the thunks may be. A thunk
    that fails carries the plan line it failed on (its own, or the fan-out's for one that is
    not a function at all), so a rehearsal says where (newuser23)."""
    meter = current_meter()
    line = origins.caller_line()
    return (_with_meter(meter, thunk, line, origins.filename) for thunk in thunks)


class _PlanEnded(RunError):
    """The plan ended (a limit, its process stopped) while its fan-out had thunks left: the
    fan-out stops, as for any RunError, and the plan's word raises ``error``. Each thunk left
    failed on its own before, one event each: 600,000 of them took 12 s past a 5 s plan and
    1.6 GB of the host (red team 21)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def _with_meter(
    meter: Any, thunk: Callable[..., Any], line: int | None = None, filename: str | None = None
) -> Callable[..., Any]:
    def metered(*args: Any) -> Any:
        if meter is not None and meter.tripped is not None:
            raise _PlanEnded(meter.tripped)
        previous = set_current_meter(meter) if meter is not None else None
        try:
            return thunk(*args)
        except PlanError:
            if meter is not None and meter.tripped is not None:
                raise _PlanEnded(meter.tripped) from None
            raise
        except Exception as error:  # the thunk's own: the run keeps it, with its plan line
            if getattr(error, "plan_line", None) is None:
                with contextlib.suppress(AttributeError):  # an error without a __dict__
                    error.plan_line = plan_line(error, filename) or line  # type: ignore
            raise
        finally:
            if meter is not None:
                set_current_meter(previous)

    return metered


def _plan_time_up() -> None:
    """Every thousand steps of a JSON-schema check on a thread that works for a plan: past its
    deadline, the check (of a model's reply, say) ends, and its worker with it (cancelled:
    nothing more is asked or billed). A check has no other end (2**30 steps for 30 ``$defs``
    each naming the next twice), and the plan's process, killed at its deadline, would leave
    a host thread checking on."""
    meter = current_meter()
    if meter is not None and time.monotonic() > meter.deadline:
        raise RunCancelled(f"the plan's time limit ({meter.limits.seconds:g} s) passed while "
                           "an answer was checked against its schema")  # fmt: skip


on_steps(_plan_time_up)


class _Located:
    """A stream's iterator, seen by the plan: a ``next()`` the runtime refuses as a fan-out that
    could never finish says which plan line asked for it."""

    __slots__ = ("_items", "_origins")

    def __init__(self, items: Iterator[Any], origins: WorkerOrigins) -> None:
        self._items, self._origins = items, origins

    def __iter__(self) -> _Located:
        return self

    def __next__(self) -> Any:
        try:
            return next(self._items)
        except _PlanEnded as ended:
            raise ended.error.with_traceback(None) from None  # one error, many threads
        except FanOutDeadlock as error:
            if error.line is None:
                error.line = self._origins.caller_line()
            raise


def run_plan(box: Sandbox, checked: CheckResult) -> Any:
    """``box.run(checked)``, with a fan-out that could never finish reported as what it is:
    the plan's own mistake, at the line of the ``next()`` that closed the cycle."""
    try:
        return box.run(checked)
    except FanOutDeadlock as error:
        raise PlanRuntimeError(
            f"FanOutDeadlock: {error}", error_type="FanOutDeadlock", line=error.line,
            filename=checked.filename,
        ) from None  # fmt: skip


def plan_sandbox(
    run: Run,
    words: Mapping[str, Any],
    *,
    host: HostProvider | Mapping[str, Any] | None,
    inputs: Any,
    limits: Limits | None,
    isolation: str | None = None,
) -> Sandbox:
    """The one sandbox set-up of a plan on a run, for a rehearsal and a real run alike: the
    run's words, the embedder's host words for this run, the inputs, and the run's log."""
    extra = host(run) if callable(host) else (host or {})
    return Sandbox(
        host={**words, **extra, "inputs": inputs if inputs is not None else {}},
        limits=limits,
        log=run.log,
        passthrough=(RunError,),
        isolation=isolation,
    )
