"""A run: a plan function driving many workers in parallel, under one budget.

A plan is a callable ``plan(run)``; it runs on its own thread (``start``) while workers run on
a thread pool bounded by ``concurrency``. What a plan gets back is plain data: an agent's
validated JSON (with a schema) or its text, and ``None`` for a worker that failed. The failure
stays with that worker (its thread record and a ``worker_failed`` event say why); only
cancellation, a replay miss and refused spend end the run, and they surface as ``RunError``.

``parallel`` is a barrier with results in the order given; ``stream`` yields ``(index, result)``
as workers finish, so a plan can start the next stage without waiting for the slowest worker.
A thunk that calls ``parallel``/``stream`` from inside a worker runs its thunks inline, in
order, so nesting can never deadlock the pool.
"""

from __future__ import annotations

import operator
import queue
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .accounting import Accounting
from .errors import FanOutDeadlock, RunCancelled, RunError, WorkerFailed
from .events import EventLog
from .fanout import FanOut, Thunk
from .llm import LLM
from .records import WorkerRecord
from .reply import Reply
from .run_view import RunView
from .settings import Settings
from .stacks import thread_stack
from .stream import Stream
from .waits import BudgetWait, Watcher, take_slot, watch_budget, without_slot
from .worker import (
    Check,
    argument_problem,
    build_messages,
    check_sizes,
    check_system,
    converse,
    key_of_shown,
    prompt_text,
    response_params,
    schema_shown,
)

Plan = Callable[["Run"], Any]
# (label, prompt, role, the plan's sample) -> the sample index to ask under
Resample = Callable[[str | None, str, str | None, int], int]

_FINISHED = {"done": "worker_done", "failed": "worker_failed"}  # else worker_cancelled
_monotonic_ns = time.monotonic_ns


class Run(RunView):
    """One execution of a plan: workers, budget, events, accounting."""

    def __init__(
        self,
        title: str,
        *,
        llm: LLM,
        concurrency: int | None = None,
        max_agents: int | None = None,
        events_path: str | Path | None = None,
        settings: Settings | None = None,
        resample: Resample | None = None,
    ) -> None:
        self.title = title
        # Which sample index to ask a question under (see Resample): a retry of workers that
        # failed asks them again under a fresh index, so the stored bad answer is not replayed.
        self.resample = resample
        self.llm = llm
        self.settings = settings if settings is not None else llm.settings
        self.concurrency = concurrency or self.settings.concurrency
        self.max_agents = max_agents or self.settings.max_agents
        if self.concurrency < 1 or self.max_agents < 1:
            raise ValueError(
                f"concurrency and max_agents must be at least 1; got {self.concurrency} and "
                f"{self.max_agents}."
            )
        self.log_events = EventLog(events_path)
        self.accounting = Accounting()
        self.threads: list[WorkerRecord] = []
        self.result: Any = None
        self.error: BaseException | None = None
        self.phase_name = "main"
        self.phases: list[str] = ["main"]  # in the order the plan started them
        self.fanned: dict[str, int] = {}  # thunks handed to parallel/stream, per phase
        self._status = "created"
        self._lock = threading.Lock()
        self._cancelled = threading.Event()
        self._closed = False  # mirrors _cancelled for the hot path: an attribute, not a call
        self._done = threading.Event()
        self._fatal: RunError | None = None
        self._asked = 0
        self._counts = {"running": 0, "done": 0, "failed": 0, "refused": 0, "cancelled": 0}
        # Agents in flight, bounded: one token per slot. A SimpleQueue is a counting semaphore
        # implemented in C, several times cheaper per agent than threading.Semaphore.
        self._slots: queue.SimpleQueue[None] = queue.SimpleQueue()
        for _ in range(self.concurrency):
            self._slots.put(None)
        self.fan_out = FanOut(self.concurrency, self.settings.thread_stack_mb,
                              closed=lambda: self._closed, cancelled=self._cancelled_error,
                              failed=self._thunk_failed)  # fmt: skip
        self._thread: threading.Thread | None = None
        self._budget_watch: Watcher = lambda old, new: None  # set by start()

    def __repr__(self) -> str:
        return f"Run({self.title!r}, status={self._status!r}, workers={len(self.threads)})"

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def status(self) -> str:
        """created, running, completed, failed or cancelled."""
        return self._status

    @property
    def events(self) -> list[dict[str, Any]]:
        return self.log_events.events

    @property
    def max_turns_per_worker(self) -> int:
        return 1 + self.settings.max_repair_turns + self.settings.max_check_retries

    def start(self, plan: Plan) -> Run:
        """Run ``plan(run)`` on a background thread and return the run (``wait``, ``cancel``).

        A plan is a callable: trusted code an embedder wrote, or planlang's ``ApprovedPlan``.
        Source text and code objects are refused, so model-written code runs only approved.
        """
        if not callable(plan):
            raise TypeError(
                f"A run takes a callable plan (trusted code, or an approved plan), not a "
                f"{type(plan).__name__}; model-written source must pass planlang's gate first."
            )
        with self._lock:
            if self._status != "created":
                raise ValueError(f"The run {self.title!r} was already started ({self._status}).")
            self._status = "running"
        self.log_events.emit("run_started", title=self.title, concurrency=self.concurrency,
                             max_agents=self.max_agents, mode=self.llm.mode)  # fmt: skip
        self._budget_watch = watch_budget(self.llm.budget, self.log_events.emit)
        self._thread = threading.Thread(target=self._main, args=(plan,), name=f"run:{self.title}")
        self._thread.daemon = True
        with thread_stack(self.settings.thread_stack_mb):
            self._thread.start()
        return self

    def _main(self, plan: Plan) -> None:
        try:
            self.result = plan(self)
        except BaseException as exc:  # the plan's own crash is recorded, not re-raised here
            self.error = exc
        finally:
            self.fan_out.shutdown(wait=True)
            self.llm.budget.unwatch(self._budget_watch)
            if self._fatal is not None:
                self.error = self._fatal
            elif self._cancelled.is_set() and not isinstance(self.error, RunCancelled):
                self.error = RunCancelled(f"The run {self.title!r} was cancelled.")
            if self.error is None:
                self._status = "completed"
            elif isinstance(self.error, RunCancelled):
                self._status = "cancelled"
            else:
                self._status = "failed"
            error = None if self.error is None else f"{type(self.error).__name__}: {self.error}"
            # A host call the plan's end left running (an isolated plan's process killed at
            # its deadline while its word waits on the model or at the cap) asks nothing more:
            # no repair or check turn, no admission at a cap raised later (REDTEAM14)
            with self._lock:
                if self._fatal is None:
                    self._fatal = RunCancelled(f"The run {self.title!r} has ended.")
                self._closed = True
                self._cancelled.set()
            self.llm.budget.wake()
            self.log_events.emit("run_finished", status=self._status, error=error,
                                 accounting=self.accounting.to_dict())  # fmt: skip
            self.log_events.close()
            self._done.set()

    def wait(self, timeout: float | None = None) -> Any:
        """Wait for the plan; return its result, or raise what ended the run.

        Ctrl-C while waiting cancels the run cleanly, then re-raises ``KeyboardInterrupt``.
        """
        if self._thread is None:
            raise ValueError(f"The run {self.title!r} was never started.")
        try:
            if not self._done.wait(timeout):
                raise TimeoutError(f"The run {self.title!r} is still running after {timeout} s.")
        except KeyboardInterrupt:
            self.cancel("interrupted (Ctrl-C)")
            self._done.wait()
            raise
        if self.error is not None:
            raise self.error.with_traceback(None)
        return self.result

    def run_sync(self, plan: Plan) -> Any:
        """``start(plan)`` then ``wait()``."""
        self.start(plan)
        return self.wait()

    def cancel(self, reason: str = "cancelled by request") -> None:
        """Refuse new workers and calls; workers already talking finish their call."""
        with self._lock:
            if self._cancelled.is_set():
                return
            self._closed = True
            self._cancelled.set()
            if self._fatal is None:
                self._fatal = RunCancelled(f"The run {self.title!r} was cancelled: {reason}.")
        self.log_events.emit("run_cancelled", reason=reason)
        # Cancels every thunk not yet started (their futures say so); running ones finish.
        self.fan_out.shutdown(wait=False)
        self.llm.budget.wake()

    def _end_with(self, error: RunError) -> None:
        with self._lock:
            if self._fatal is None:
                self._fatal = error
        self.cancel(f"{type(error).__name__}: {error}")

    def _cancelled_error(self) -> RunCancelled:
        # A fresh exception per raise: re-raising one shared instance from many threads
        # would keep growing its traceback.
        fatal = self._fatal
        if isinstance(fatal, RunCancelled):
            return RunCancelled(str(fatal))
        cause = "" if fatal is None else f" ({type(fatal).__name__}: {fatal})"
        return RunCancelled(f"The run {self.title!r} was cancelled{cause}.")

    def _check_open(self) -> None:
        if self._closed:
            raise self._cancelled_error()

    # -- plan words --------------------------------------------------------------------------

    def phase(self, name: str) -> None:
        """Start a named phase; workers and calls are accounted to it."""
        self.phase_name = str(name)
        with self._lock:
            if self.phase_name not in self.phases:
                self.phases.append(self.phase_name)
        self.log_events.emit("phase", name=self.phase_name)

    def log(self, message: Any) -> None:
        self.log_events.emit("log", message=str(message), phase=self.phase_name)

    def agent(
        self,
        prompt: str,
        schema: dict[str, Any] | None = None,
        model: str | None = None,
        label: str | None = None,
        system: str | None = None,
        data: Any = None,
        sample: int = 0,
        check: Check | None = None,
    ) -> Any:
        """Run one worker; return its validated JSON (schema) or text, or None if it failed.

        ``model`` names a role from the settings (or, failing that, a model at the default
        price). Raises ``RunError`` only for what ends the run.
        """
        if self._closed:
            raise self._cancelled_error()
        # queued since its thunk went to the pool (the thunk's first worker) or since now
        queued_ns = self.fan_out.take_queued_ns() or _monotonic_ns()
        try:  # a value of shared parts can be gigabytes as text: bounded before it is made
            prompt, unfit = prompt_text(prompt), None
        except ValueError as exc:
            prompt, unfit = "(a prompt too large to be written out)", str(exc)
        wrong = argument_problem(model, label, sample)
        if wrong is not None:  # its worker fails, saying why; nothing is asked
            model = model if isinstance(model, str) else None
            label = label if isinstance(label, str) else None
            sample, unfit = 0, unfit or wrong
        else:
            sample = operator.index(sample)  # a plain int (a numpy one is taken too)
        record = self._admit_worker(prompt, model, label)
        if record.status == "refused":
            return None
        if unfit is not None:
            self._finish(record, "failed", error=unfit)
            return None
        record.asked_sample = sample
        if self.resample is not None:
            sample = self.resample(label, str(prompt), model, sample)
        record.sample = sample
        if check is not None:  # a check may fan out: the agents it waits for need slots
            check = without_slot(self._slots, check)
        queued = take_slot(self._slots, queued_ns)  # at most `concurrency` agents talk at once
        try:
            if queued:  # else it started at once: its worker_started says when
                self.log_events.emit("worker_running", worker=record.id,
                                     queued_since=self.log_events.t_of(queued_ns))  # fmt: skip
            return self._talk(record, prompt, schema, model, system, data, sample, check)
        finally:
            self._slots.put(None)

    def _talk(self, record: WorkerRecord, prompt: str, schema: dict[str, Any] | None,
              model: str | None, system: str | None, data: Any, sample: int,
              check: Check | None) -> Any:  # fmt: skip
        """One admitted worker's conversation, and how it ended."""
        try:
            if self._closed:
                raise self._cancelled_error()
            check_sizes(schema, data)  # before their text is made: that is as long as they are
            check_system(system)
            # The schema's text once: shown to the model and, when it is the same text, the key
            # of its validator.
            shown = schema_shown(schema) if schema is not None else None
            record.messages.extend(
                build_messages(prompt, system=system, schema=schema, data=data, shown=shown)
            )
            params = response_params(schema, self.settings.response_format)
            value = converse(
                self._chat_for(record, model, sample, params),
                record,
                schema=schema,
                check=check,
                max_repairs=self.settings.max_repair_turns,
                max_checks=self.settings.max_check_retries,
                schema_text=None if shown is None else key_of_shown(shown),
                on_retry=lambda why, problem: self.log_events.emit(
                    "retry", worker=record.id, turn=record.turns + 1, why=why, problem=problem[:500]
                ),
            )
        except RunError as exc:
            if not isinstance(exc, RunCancelled | FanOutDeadlock):  # the plan's: it ends the plan
                self._end_with(exc)
            self._finish(record, "cancelled", error=f"{type(exc).__name__}: {exc}")
            raise
        except (WorkerFailed, ValueError) as exc:
            reason = exc.reason if isinstance(exc, WorkerFailed) else str(exc)
            self._finish(record, "failed", error=reason)
            return None
        except BaseException as exc:  # a defect below: the record still says how it ended
            self._finish(record, "failed", error=f"internal error: {type(exc).__name__}: {exc}")
            raise
        self._finish(record, "done", result=value)
        return value

    def _admit_worker(self, prompt: str, role: str | None, label: str | None) -> WorkerRecord:
        with self._lock:
            self._asked += 1
            asked = self._asked
            record = WorkerRecord(asked, label, role, self.settings.role(role).model,
                                  self.phase_name, str(prompt))  # fmt: skip
            self.threads.append(record)
            refused = asked > self.max_agents
            self._counts["refused" if refused else "running"] += 1
        if not refused:
            self.log_events.emit("worker_started", worker=asked, label=label, role=role,
                                 phase=record.phase)  # fmt: skip
            return record
        reason = f"past max_agents={self.max_agents}: refused before any call"  # one reason for all
        record.finish("refused", error=reason)
        self.log_events.emit("worker_refused", worker=asked, label=label, reason=reason)
        if asked >= 2 * self.max_agents:
            self.cancel(f"runaway: {asked} workers asked for, twice max_agents={self.max_agents}")
            self._check_open()
        return record

    def _chat_for(
        self, record: WorkerRecord, role: str | None, sample: int, params: dict[str, Any]
    ) -> Callable[[list[dict[str, Any]]], Reply]:
        waits = BudgetWait(self.log_events.emit, record.id)
        on_wait, on_resume = waits.on_wait, waits.on_resume

        # looked up once per worker, not once per call
        ask, stop, record_call = self.llm.chat, self._cancelled.is_set, self.accounting.record
        emit, worker, phase = self.log_events.emit, record.id, record.phase

        def chat(messages: list[dict[str, Any]]) -> Reply:
            if self._closed:
                raise self._cancelled_error()
            reply = ask(messages, role=role, sample=sample, stop=stop, on_wait=on_wait,
                        on_resume=on_resume, **params)  # fmt: skip
            record_call(phase, role or reply.model, worker, reply)
            standin = reply.standin
            emit(
                "call", worker=worker, turn=record.turns + 1, phase=phase, role=role,
                model=reply.model, cached=reply.cached, standin=standin, credits=reply.billed,
                would_credits=reply.credits if standin else 0.0, seconds=round(reply.seconds, 6),
            )  # fmt: skip
            return reply

        return chat

    def _finish(
        self, record: WorkerRecord, status: str, *, error: str | None = None, result: Any = None
    ) -> None:
        record.finish(status, error=error, result=result)
        with self._lock:
            self._counts["running"] -= 1
            self._counts[status] += 1
        kind = _FINISHED.get(status, "worker_cancelled")
        self.log_events.emit(kind, worker=record.id, turns=record.turns, credits=record.credits,
                             would_credits=record.would_credits, error=error)  # fmt: skip

    # -- fan-out (runtime.fanout) --------------------------------------------------------------

    def in_worker(self) -> bool:
        return self.fan_out.in_worker()

    def parallel(self, thunks: Iterable[Thunk]) -> list[Any]:
        """Run thunks in parallel and wait for all; results in the order given."""
        thunks = list(thunks)
        self._fanned(len(thunks))
        return self.fan_out.parallel(thunks)

    def stream(self, thunks: Iterable[Thunk], then: Callable[[Any], Any] | None = None) -> Stream:
        """Yield ``(index, result)`` as workers finish; see ``runtime.stream.Stream``."""
        thunks = list(thunks)
        self._fanned(len(thunks))
        return Stream(self.fan_out, thunks, then)

    def _fanned(self, count: int) -> None:
        """A fan-out from the plan (not a nested, inline one) tells progress its total."""
        if not self.fan_out.in_worker():
            with self._lock:
                self.fanned[self.phase_name] = self.fanned.get(self.phase_name, 0) + count

    def _thunk_failed(self, index: int, exc: Exception) -> None:
        self.log_events.emit("thunk_failed", index=index, phase=self.phase_name,
                             error=f"{type(exc).__name__}: {exc}",
                             line=getattr(exc, "plan_line", None))  # fmt: skip
