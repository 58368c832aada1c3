"""The host's side of an isolated run: host words served to a plan in another process.

``run_isolated(box, checked)`` takes a warm child from the pool, sends it the checked plan, the
limits and the host's values (host words, host objects and iterators as handles), then serves
what the child asks: host calls, methods, attributes, the next item of an iterator. A plan
function handed to a host word arrives as a ``Callback``: calling it asks the child to run the
function there, under the plan's limits. The host enforces the wall clock itself: at the time
limit plus ``GRACE`` the child is killed, whatever host call is still blocked (its result is
discarded). A child that dies ends the plan with ``PlanLimitError`` naming why; nothing of the
child's ever runs here, and what it sends is decoded under the codec's bounds.
"""

from __future__ import annotations

import functools
import threading
import time
import types
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, cast

from planlang.check import CheckResult
from planlang.errors import PlanError, PlanLimitError, PlanRuntimeError
from planlang.isolation.channel import PLAIN, ChannelClosed, ChannelTimeout, Endpoint
from planlang.isolation.codec import (
    EMPTY_KWARGS,
    CodecError,
    Encoder,
    decode_arguments,
)
from planlang.isolation.frames import BUDGET_FLOOR, FrameReader, FrameTooCostly
from planlang.isolation.handles import Handles, host_adapt
from planlang.isolation.host_refusals import NO_SPARE, Nesting, no_underscore, too_deep
from planlang.isolation.known_values import KnownValues
from planlang.isolation.lanes import Callback, Lane, Lanes
from planlang.isolation.mode import _calling
from planlang.isolation.payload import code_payload, limits_payload
from planlang.isolation.plain import flat, plain_answer, plain_tree
from planlang.isolation.plan_threads import PlanThreads
from planlang.isolation.pool import Child, default_pool, discard_later
from planlang.isolation.queued import Queued
from planlang.isolation.quiet_pipe import pipe_writer
from planlang.isolation.wire import describe, plan_error_from
from planlang.isolation.word_names import named_like_the_wrapper
from planlang.sandbox import inprocess as _sandbox
from planlang.sandbox.inprocess import register_isolated_runner, used_names
from planlang.sandbox.limits import Meter

if TYPE_CHECKING:
    from planlang.sandbox.inprocess import Sandbox

__all__ = ["Callback", "GRACE", "run_isolated"]  # Callback: planlang.isolation.lanes

GRACE = 1.0  # seconds past the time limit before the host kills the plan's process


class _Session(Handles):
    """One plan run in one child: the handles handed out (``Handles``) and the channel."""

    def __init__(self, box: Sandbox, child: Child, meter: Meter):
        super().__init__(box)
        self.child = child
        self.meter = meter
        self.passthrough_error: BaseException | None = None
        self.printed = 0  # characters the plan printed
        self.done_at: float | None = None  # when the child said its plan ended (``notice``)
        self.ended: PlanLimitError | None = None
        self.stopped: PlanLimitError | None = None  # a limit the host itself found, ending it
        self.limit_heard: PlanLimitError | None = None  # a callback's limit (lanes: tails)
        self._nesting = Nesting()  # requests served within requests, per host thread
        self._deepest = box.limits.depth + 1  # a host word, then one a level of plan calls
        self.filename: str | None = None  # no plan frames run here; errors carry their line
        reader, writer = child.take()
        # one frame the plan sends decodes to no more than the plan may use, or the floor
        self._budget = max(box.limits.memory_mb * 2**20, BUDGET_FLOOR)
        self._large = threading.Lock()  # its readers (channel, lanes) take one at a time
        # large requests being served, together within the budget (host words nest)
        self._held = Queued("being served by the host")
        reader.set_budget(self._budget, self._large, self._held)
        self._over = over = threading.Event()  # the channel closed or the child died: it is over
        self._write = pipe_writer()  # SIGPIPE kills a host that has not ignored it
        self.endpoint = Endpoint(reader, writer, self.serve, self.notice, spare=NO_SPARE,
                                 write=self._write, on_close=lambda _: over.set())  # fmt: skip
        self.lanes = Lanes(child.lanes, self._lane, self._announce)
        self._known = KnownValues()  # a worker's schema, decoded once a run
        self.closing: Callable[[], None] | None = None  # a finished run's, for the discarder

    def _lane(self, number: int, reader: FrameReader, writer: int) -> Endpoint:
        reader.set_budget(self._budget, self._large, self._held)
        return Lane(reader, writer, self.serve, self.notice, on_close=self._lane_closed,
                    write=self._write, takes_tail=self.takes_tail)  # fmt: skip

    def takes_tail(self) -> bool:
        """Whether a tail's answer may be the callback's now (``lanes``): no limit heard from
        the plan's process, the run going on, its deadline not passed. Otherwise the plan's
        process gets the answer, and its host word's wrapper decides, as without tails."""
        return (self.limit_heard is None and self.meter.tripped is None
                and not self._over.is_set() and time.monotonic() <= self.meter.deadline
                )  # fmt: skip

    def _announce(self, number: int) -> None:
        try:
            self.endpoint.send(["n", None, "lane", number])
        except ChannelClosed:
            pass  # the run is over: the lane's first request finds out

    def _lane_closed(self, reason: str) -> None:
        """A lane that broke the protocol ends the run with its reason. (A lane that ended
        with its process leaves that to the run's channel, which hears of it in order.)"""
        if self.ended is None and not self.lanes.closed and reason.startswith("a frame"):
            for lane in self.lanes.endpoints():
                if lane.failure is not None and self.endpoint.failure is None:
                    self.endpoint.failure = lane.failure
            self.broke(reason)

    def _stop(self, error: PlanLimitError) -> PlanLimitError:
        """End the run with a limit the host found (its process is killed, its pipes closed)."""
        self.stopped = error
        self.endpoint.close(error.message)
        self.child.discard()
        return error

    def broke(self, reason: str) -> PlanLimitError:
        """End the run: the plan's process broke the protocol (``reason`` says how, and
        starts "a frame"). Its process is killed, so a thread reading any of its pipes wakes."""
        self.endpoint.close(reason)
        self.child.stop()
        discard_later(self.child)
        return PlanLimitError("crash", f"The plan's process broke the protocol: {reason}.")

    # -- serving the child -----------------------------------------------------------------

    def serve(self, op: str, payload: Any) -> tuple[Any, Any]:
        local = _sandbox._running
        previous = local.meter
        meter = self.meter
        if previous is not meter:  # current_meter() works in host words, as in one process
            local.meter = meter
        nesting = self._nesting
        nesting.level += 1
        try:
            if nesting.level > self._deepest:  # a plan's process that skips its own count
                raise self._stop(too_deep(self.box.limits.depth))
            if op == "call":
                result = self._call(payload)
                if flat(result):
                    return True, result
                if plain_answer(result) or plain_tree(result):
                    return PLAIN, result
                name = getattr(self.words[payload[0]], "__name__", "host word")
                return True, self._result(result, f"The host word {name!r}")
            return self._serve(op, payload)
        except BaseException as error:  # noqa: BLE001 - every failure goes back as data
            if self.box.passthrough and isinstance(error, self.box.passthrough):
                self.passthrough_error = error
            return False, describe(error, self.box.passthrough, self.filename)
        finally:
            nesting.level -= 1
            if self._held.costs:  # a large request: released, served
                self._held.take(payload)
            if previous is not meter:
                local.meter = previous

    def _call(self, payload: Any) -> Any:
        """A host word called: the hot path of an isolated plan."""
        wid, args, kwargs, line = payload
        fn = self.words[wid]
        calling = _calling
        previous = calling.line
        calling.line = line if type(line) is int else None
        named = self.word_names.get(wid)
        try:
            positional, _ = decode_arguments(args, EMPTY_KWARGS, self.decode)
            keywords = {} if kwargs == EMPTY_KWARGS else self.decode(kwargs, keywords=True)
            if keywords and any(type(key) is not str or (key.startswith("_") and named is None)
                                for key in keywords):  # fmt: skip
                raise TypeError("A host word cannot take an argument whose name starts with '_'.")
            return fn(*positional, **keywords)  # a plain signature has no "_" parameter
        except TypeError as error:
            if named is None:
                raise
            raise named_like_the_wrapper(error, fn, named) from None
        finally:
            calling.line = previous

    def _result(self, result: Any, where: str) -> Any:
        if type(result) is not dict and hasattr(result, "__next__"):
            return {"n": self._new_id(self.iterators, result)}
        return self.encode(result, where)

    def _serve(self, op: str, payload: Any) -> tuple[Any, Any]:
        if op == "method" or op == "attr":
            proxy = self.objects[int(payload[0])]
            name = str(payload[1])
            where = f"{proxy._label}.{name}"
            if op == "attr":
                if name not in proxy._attributes:
                    raise AttributeError(name)
                return True, self.encode(getattr(proxy._target, name), where)
            if name not in proxy._methods:
                raise AttributeError(name)
            args, keywords = self.decode(payload[2]), self.decode(payload[3])
            no_underscore(keywords, "A host object's method")  # as the plan's wrapper does
            result = getattr(proxy._target, name)(*args, **keywords)
        elif op == "next":
            iterator = self.iterators[int(payload[0])]
            previous = _calling.line
            _calling.line = payload[1] if type(payload[1]) is int else None  # who asked
            try:
                item = next(iterator)
            except StopIteration:
                return True, ["stop"]
            finally:
                _calling.line = previous
            return True, self.encode(["item", item], "A host iterator")
        else:
            raise CodecError(f"Unknown request {op!r}.")
        if flat(result):
            return True, result
        if plain_answer(result) or plain_tree(result):
            return PLAIN, result
        return True, self._result(result, where)

    def notice(self, op: str, payload: Any) -> None:
        if op == "done" and self.done_at is None:  # its plan ended; its result comes next
            self.done_at = time.monotonic()
            return
        if op == "free" and type(payload) is list:  # host iterators the plan dropped
            iterators = self.iterators
            for nid in payload:
                if type(nid) is int:
                    iterators.pop(nid, None)
            return
        if op == "print" and type(payload) is str:
            # the plan's process bounds what a plan prints by Limits.size; the host holds one
            # that does not to the same bound
            self.printed += len(payload) + 1
            if self.printed > self.box.limits.size:
                self.broke("a frame was not allowed: what the plan printed passed its size limit")
                return
            log = self.box._log
            if log is not None:
                log(payload)
            else:
                self.box.printed.append(payload)

    # -- the run ---------------------------------------------------------------------------

    def host_values(self, code: Any) -> dict[str, Any]:
        names = used_names(code) & self.box.host.keys()
        return {name: Encoder(self._host_handle(name), host_adapt).encode(self.box.host[name])
                for name in sorted(names)}  # fmt: skip

    def run(self, checked: CheckResult, code_sent: bool = False) -> Any:  # sent: with "go"
        limits = self.box.limits
        code = checked.code
        assert code is not None  # a checked plan that passed
        marshalled, names, deep = code_payload(code, code.co_filename)
        payload = {
            "code": None if code_sent else marshalled,
            "filename": checked.filename,
            "sha256": checked.sha256,
            "limits": limits_payload(limits),
            "host": self.host_values(checked.code),
            "deadline": self.encode(self.meter.deadline),
            # what the host worked out about this code already (cached here, not there)
            "names": names,
            "deep": deep,
        }
        payload.update(getattr(self.box, "_probe", None) or {})

        until = self.meter.deadline + GRACE

        def hand_off(go_on: Callable[[], tuple[bool, Any]]) -> tuple[bool, Any]:
            """The plan's first call: from here its calls are served on a thread of the
            host's own, so a host word that blocks holds that thread, never this one, which
            keeps the wall clock."""

            def plan_thread() -> tuple[bool, Any]:  # the host side of the plan's own thread
                _sandbox._running.meter = self.meter
                try:
                    return go_on()
                finally:
                    _sandbox._running.meter = None

            answer = _PLAN_THREADS.submit(plan_thread)
            answer.add_done_callback(lambda _: self._over.set())
            over = self._over.wait(max(0.0, until - time.monotonic()))
            if over and not answer.done():  # the channel closed, or the plan's process died
                try:  # what the plan's thread had queued still comes, within the grace
                    return answer.result(timeout=GRACE)
                except FutureTimeout:  # a host word blocks on: the run ends as the channel did
                    raise ChannelClosed(self.endpoint.closed or "its process ended") from None
            return answer.result(timeout=0)  # its answer, or the time is up

        try:
            ok, data = self.endpoint.request("run", payload, until=until, hand_off=hand_off)
            # within the grace, but its plan ended late: the plan's own meter would have
            # stopped it (REDTEAM9). Its end, not its answer's arrival: encoding and reading
            # a large result is no time of the plan's, as in one process (REVIEW9)
            ended = self.done_at if self.done_at is not None else time.monotonic()
            if ok and ended > self.meter.deadline:
                raise ChannelTimeout
        except (FutureTimeout, ChannelTimeout):
            message = (
                f"The plan passed its time limit of {limits.seconds:g} s; its process was stopped."
            )
            self._end(PlanLimitError("seconds", message))
            raise self.ended from None  # type: ignore[misc]
        except ChannelClosed:
            why = self.endpoint.closed or ""
            if self.stopped is not None:
                self._end(self.stopped)
            elif isinstance(self.endpoint.failure, FrameTooCostly):
                self._end(PlanLimitError("memory", str(self.endpoint.failure)))
            elif why.startswith("a frame"):  # alive, but it broke the protocol: no exit to wait for
                self._end(PlanLimitError("crash", f"The plan's process broke the protocol: {why}."))
            else:
                self._end(self.child.death(wait=min(5.0, max(0.1, until - time.monotonic()))))
            raise self.ended from None  # type: ignore[misc]
        except KeyboardInterrupt:
            self._end(PlanLimitError("interrupted", "The plan was interrupted."))
            raise self.ended from None  # type: ignore[misc]
        finally:
            if self.ended is None:
                self._end(PlanLimitError("finished", "The plan has already finished."))
        if self.passthrough_error is not None:
            raise self.passthrough_error
        try:
            if not ok:
                error: PlanError = plan_error_from(data)
            else:
                result, steps = data
                self.meter.steps = int(steps)
                return self.decode(result, handed=False)
        # what no child of ours sends (steps of inf; a kind nested past str()'s recursion)
        except (CodecError, TypeError, ValueError, OverflowError, RecursionError) as bad:
            raise PlanRuntimeError(f"TypeError: {bad}", error_type="TypeError") from None
        raise error

    def _end(self, error: PlanLimitError) -> None:
        self.ended = error
        self.meter.close(error)
        self._held.clear()  # callbacks' answers are no longer counted
        if error.kind == "finished":  # the usual end: lanes (16 pipe ends) and channel closed
            # off the run's path, with the child, once the run has made its result
            # (``run_isolated``); a callback raises ``ended`` before either
            self.closing = functools.partial(self._close, error.message)
            return
        self._close(error.message)
        self.child.stop()  # stopped at once; what it wrote is removed later
        discard_later(self.child)

    def _close(self, reason: str) -> None:  # the lanes, then the run's channel
        self.lanes.close(reason)
        self.endpoint.close(reason)


# The host side of each plan's thread: it serves the plan's host calls, so a host word that
# blocks holds one of these, never the caller of ``run`` (which keeps the wall clock); one
# that blocks past its run keeps its thread, and later runs start others (``plan_threads``).
_PLAN_THREADS = PlanThreads("planlang-plan-host")


def run_isolated(box: Sandbox, checked: CheckResult) -> Any:
    """Run ``checked`` for ``box`` in a child process; the same results and errors."""
    pool = getattr(box, "_pool", None) or default_pool()
    code = cast(types.CodeType, checked.code)  # the child loads it while the run is made here
    child = pool.acquire(code_payload(code, code.co_filename)[0])  # a cold pool: not our time
    meter = Meter(box.limits)
    box.last_meter = meter
    session = _Session(box, child, meter)
    child.zygote.watch(child.pid, session._over.set)  # its death wakes the run's thread
    try:
        return session.run(checked, code_sent=True)
    finally:
        if session.ended is None:  # it failed before it was sent (a host value): end it
            session._end(PlanLimitError("finished", "The plan did not start."))
        if session.closing is None:  # ended by a limit: its child is being discarded
            pool.refill()  # the replacement child, forked now that this run is over
        else:  # one thread woken, as the run returns: it closes, refills, then discards
            discard_later(child, session.closing, then=pool.refill)


register_isolated_runner(run_isolated)
