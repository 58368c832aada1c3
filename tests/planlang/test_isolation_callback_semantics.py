"""A plan function called back from the host gives the host what one process gives, at the
edges: a limit hit in a nested callback or in another thunk, a run stopped while the word
blocks, and memory a finished callback no longer holds. Each compares what the host word saw
(or the run's result) under process isolation with one process. Written by the review of tail
calls on a lane (branch fanout, not merged): each case failed with tails, where the host
took the last host call's answer as the callback's result without the plan's process
(FANOUT-REVIEW 1 to 3); a later attempt at tails must pass them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from planlang.errors import PlanLimitError
from planlang.isolation.parent import GRACE
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits

MODES = ("inprocess", "process")
HANG_GUARD = 30.0


def _outcome(box: Sandbox, source: str) -> Any:
    try:
        return box.run(source)
    except PlanLimitError as error:
        return ("limit", error.kind)


def _recording_fan_out(seen: dict[int, Any], done: Callable[[int], None] = lambda i: None
                       ) -> Callable[[list[Callable[[], Any]]], list[Any]]:  # fmt: skip
    """An embedder's fan-out word: each thunk on a thread of its own; what each returned or
    raised is kept, as an embedder's own code would see it."""

    def fan_out(thunks: list[Callable[[], Any]]) -> list[Any]:
        def call(i: int, thunk: Callable[[], Any]) -> None:
            try:
                seen[i] = thunk()
            except Exception as error:  # noqa: BLE001 - the embedder sees what it raised
                seen[i] = f"{type(error).__name__}: {error}"
            finally:
                done(i)

        threads = [threading.Thread(target=call, args=(i, t)) for i, t in enumerate(thunks)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(HANG_GUARD)
        return [seen.get(i) for i in range(len(thunks))]

    return fan_out


def test_a_tail_whose_word_called_back_a_plan_function_that_hit_a_limit_is_not_its_answer(
) -> None:  # fmt: skip
    """The tail call's word calls a plan function back; that one passes the step limit, and
    the word (an embedder's) swallows the error and returns a value. In one process the
    host word's wrapper then raises the tripped limit: the callback fails. A tail must not
    hand the word's value to the host as the callback's result."""

    def guarded(f: Callable[[], Any]) -> Any:
        try:
            return f()
        except Exception:  # noqa: BLE001 - an embedder's word that falls back
            return {"fallback": True}

    source = ("def spin():\n    while True:\n        pass\n"
              "result = fan_out([lambda: guarded(spin)])\n")  # fmt: skip
    seen: dict[str, Any] = {}
    for mode in MODES:
        kept: dict[int, Any] = {}
        box = Sandbox(host={"fan_out": _recording_fan_out(kept), "guarded": guarded},
                      limits=Limits(steps=20_000, seconds=20), isolation=mode)  # fmt: skip
        assert _outcome(box, source) == ("limit", "steps")
        seen[mode] = kept
    assert isinstance(seen["inprocess"][0], str) and "PlanLimitError" in seen["inprocess"][0]
    assert seen["process"] == seen["inprocess"]


def test_a_tail_answered_after_another_thunk_hit_a_limit_is_not_the_callbacks_result() -> None:
    """Two thunks: the second's host call is in flight when the first passes the step limit
    (the host orders it so, with events). In one process the second's host word wrapper
    raises the tripped limit once its word returns; the host's fan-out sees two failures."""
    source = ("def spin():\n    while True:\n        pass\n"
              "result = fan_out([lambda: wait_for_b() or spin(),\n"
              "                  lambda: after_a()])\n")  # fmt: skip
    seen: dict[str, Any] = {}
    for mode in MODES:
        kept: dict[int, Any] = {}
        b_in_flight, a_failed = threading.Event(), threading.Event()

        def done(i: int, a_failed: threading.Event = a_failed) -> None:
            if i == 0:
                a_failed.set()

        def wait_for_b(b_in_flight: threading.Event = b_in_flight) -> None:
            b_in_flight.wait(HANG_GUARD)

        def after_a(b_in_flight: threading.Event = b_in_flight,
                    a_failed: threading.Event = a_failed) -> Any:  # fmt: skip
            b_in_flight.set()
            a_failed.wait(HANG_GUARD)
            return {"answer": 1}

        host = {"fan_out": _recording_fan_out(kept, done), "wait_for_b": wait_for_b,
                "after_a": after_a}  # fmt: skip
        box = Sandbox(host=host, limits=Limits(steps=20_000, seconds=20), isolation=mode)
        assert _outcome(box, source) == ("limit", "steps")
        seen[mode] = kept
    assert all("PlanLimitError" in str(v) for v in seen["inprocess"].values())
    assert seen["process"] == seen["inprocess"]


def test_a_tail_answered_after_the_run_was_stopped_is_not_a_callbacks_result() -> None:
    """The tail call's word blocks past the deadline and grace: the host stops the plan's
    process and the run ends at its time limit. The word's late answer must be discarded, as
    for any host call of a run that is over (main: the callback raises the run's end); a
    tail hands it to the embedder's fan-out word as the result of a plan function that never
    returned (the plan's process was killed first)."""
    kept: dict[int, Any] = {}

    def slow() -> Any:
        time.sleep(1 + GRACE + 1.0)
        return {"late": True}

    fan_out = _recording_fan_out(kept)
    box = Sandbox(host={"fan_out": fan_out, "slow": slow}, limits=Limits(seconds=1),
                  isolation="process")  # fmt: skip
    assert _outcome(box, "result = fan_out([lambda: slow()])\n") == ("limit", "seconds")
    deadline = time.monotonic() + HANG_GUARD
    while 0 not in kept and time.monotonic() < deadline:
        time.sleep(0.05)  # the fan-out word's thread outlives the run: wait for what it saw
    assert 0 in kept
    assert kept[0] != {"late": True}
    assert "PlanLimitError" in str(kept[0])


def test_a_taken_tails_frames_do_not_hold_the_plans_memory() -> None:
    """Four thunks, one after another but each on a lane of its own (all are taken before
    the first runs): each makes 40 MB of text, then calls a host word as its last act. In
    one process (and on main) each text is freed when its thunk returns; under tails each
    stays alive in its unwound-later frames until the next callback on that lane, which
    never comes, and the third thunk passes a 100 MiB memory limit."""
    source = ('thunk = lambda i: wait_turn(i) and (s := "x" * 40_000_000) and agent(i)\n'
              "result = fan_out([thunk] * 4)\n")  # fmt: skip
    results = []
    for mode in MODES:
        turns = [threading.Event() for _ in range(5)]
        turns[0].set()

        def fan_out(thunks: list[Callable[[int], Any]], turns: list[threading.Event] = turns
                    ) -> list[Any]:  # fmt: skip
            out: list[Any] = [None] * len(thunks)

            def call(i: int) -> None:
                try:
                    out[i] = thunks[i](i)
                except Exception as error:  # noqa: BLE001 - kept, as an embedder would
                    out[i] = f"{type(error).__name__}: {error}"
                finally:
                    turns[i + 1].set()

            threads = [threading.Thread(target=call, args=(i,)) for i in range(len(thunks))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(HANG_GUARD)
            return out

        def wait_turn(i: int, turns: list[threading.Event] = turns) -> bool:
            turns[i].wait(HANG_GUARD)
            return True

        host = {"fan_out": fan_out, "wait_turn": wait_turn, "agent": lambda i: {"i": i}}
        box = Sandbox(host=host,
                      limits=Limits(seconds=30, size=10**8, memory_mb=100),
                      isolation=mode)  # fmt: skip
        results.append(_outcome(box, source))
    assert results[0] == [{"i": i} for i in range(4)]
    assert results[1] == results[0]
