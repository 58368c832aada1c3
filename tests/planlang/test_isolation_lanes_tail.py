"""Tail calls on a lane (planlang.isolation.lanes, peer.Peer.call_op): a callback whose last
act is a host call is answered by the host with that call's answer, two frames where there
were four. What must hold: the same results and errors as in one process; only a call the
plan function called back returns at once, with no handler around it, is taken; the host
takes only a copy of its own word's plain answer, and anything else goes back as a call's
answer; a plan process cannot make a tail of anything but its own callback.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from lane_probes import calls_back_on_a_thread, lane_probe

from planlang.errors import PlanError, PlanLimitError
from planlang.isolation import lanes as lanes_module
from planlang.isolation.peer import tail_calls
from planlang.isolation.pool import Pool
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits

MODES = ("inprocess", "process")


@pytest.fixture
def fan_out() -> Iterator[Callable[[list[Callable[[], Any]]], list[Any]]]:
    pool = ThreadPoolExecutor(4, thread_name_prefix="test-fan")

    def fan_out(thunks: list[Callable[[], Any]]) -> list[Any]:
        def call(thunk: Callable[[], Any]) -> Any:
            try:
                return thunk()
            except Exception as error:  # noqa: BLE001 - the embedder sees what it raised
                return f"{type(error).__name__}: {error}"

        return list(pool.map(call, thunks))

    yield fan_out
    pool.shutdown()


@pytest.fixture
def tails(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each tail call the host was asked for in this process: True where it took it."""
    asked: list[bool] = []
    original = lanes_module.Lane._tail

    def spied(self: Any, qid: int, payload: Any) -> Any:
        taken = original(self, qid, payload)
        asked.append(taken is not None)
        return taken

    monkeypatch.setattr(lanes_module.Lane, "_tail", spied)
    return asked


def run_both(source: str, host: dict[str, Any]) -> list[Any]:
    return [Sandbox(host=host, limits=Limits(seconds=20), isolation=mode).run(source)
            for mode in MODES]  # fmt: skip


def agent(role: str, n: int) -> Any:
    if n == 3:
        raise ValueError(f"no answer for {n}")
    if n == 4:
        return ("a", "tuple")  # not plain JSON: crosses through the codec
    if n == 5:
        return n * 10  # a scalar
    return {"role": role, "n": n, "tags": [role, str(n)], "deep": {"k": [n, {"m": n}]}}


def test_a_callback_that_ends_in_a_host_call_gives_what_one_process_gives(
    fan_out: Any, tails: list[bool]
) -> None:
    """Plain answers, a scalar, an error and a value the codec carries: each as in one
    process; only the plain ones and the scalar are taken as the callback's."""
    source = "result = fan_out([lambda n=n: agent('coder', n) for n in range(8)])\n"
    inprocess, isolated = run_both(source, {"fan_out": fan_out, "agent": agent})
    assert isolated == inprocess
    assert isinstance(isolated[3], str) and "no answer for 3" in isolated[3]
    assert len(tails) == 8
    assert tails.count(False) == 2  # the error and the tuple went back to the plan's process


def test_the_callers_answer_is_a_copy_of_the_host_words(fan_out: Any, tails: list[bool]) -> None:
    shared = {"tags": ["a", "b"], "n": 1}
    source = "result = fan_out([lambda: same(), lambda: same()])\n"
    replies = Sandbox(host={"fan_out": fan_out, "same": lambda: shared},
                      limits=Limits(seconds=20), isolation="process").run(source)  # fmt: skip
    assert tails == [True, True]
    assert replies == [shared, shared]
    assert replies[0] is not shared and replies[0]["tags"] is not shared["tags"]


@pytest.mark.parametrize(
    "body",
    [
        "    return agent('coder', n)['n']\n",  # the call's value is used
        "    r = agent('coder', n)\n    return r\n",  # not returned at once (a step between)
        "    return [agent('coder', n)]\n",
    ],
)
def test_only_a_call_returned_at_once_is_a_tail(fan_out: Any, tails: list[bool], body: str
                                                ) -> None:  # fmt: skip
    source = f"def work(n):\n{body}result = fan_out([lambda n=n: work(n) for n in range(6)])\n"
    inprocess, isolated = run_both(source, {"fan_out": fan_out, "agent": agent})
    assert isolated == inprocess
    assert tails == []


def test_a_call_returned_at_once_by_a_named_function_is_a_tail(fan_out: Any, tails: list[bool]
                                                               ) -> None:  # fmt: skip
    notes: list[int] = []
    source = ("def work(n):\n    note(n)\n    return agent('coder', n)\n"
              "result = fan_out([lambda n=n: work(n) for n in range(3)])\n")  # fmt: skip
    inprocess, isolated = run_both(source, {"fan_out": fan_out, "agent": agent,
                                            "note": notes.append})  # fmt: skip
    assert isolated == inprocess
    assert sorted(notes) == [0, 0, 1, 1, 2, 2]
    assert tails == []  # the lambda's call of work is its last act, but work is plan code


def test_a_tail_calls_word_may_call_the_plan_back_within(fan_out: Any, tails: list[bool]) -> None:
    """The host word of a tail call calls a plan function back (on the same lane, nested):
    that one is answered as any, and then the tail is taken."""

    def apply(f: Callable[[int], Any], x: int) -> Any:
        return {"x": f(x)}

    source = "result = fan_out([lambda n=n: apply(lambda x: agent('c', x), n) for n in range(3)])\n"
    inprocess, isolated = run_both(source, {"fan_out": fan_out, "apply": apply, "agent": agent})
    assert isolated == inprocess
    assert tails == [True, True, True]  # the inner callbacks are nested: no tails of their own


def test_tail_calls_are_found_only_where_a_call_is_returned_at_once() -> None:
    def tail(f: Any) -> Any:
        return f(1)

    def used(f: Any) -> Any:
        return f(1) + 1

    def handled(f: Any) -> Any:
        try:
            return f(1)
        except ValueError:
            return None

    assert tail_calls(tail.__code__)
    assert not tail_calls(used.__code__)
    assert not tail_calls(handled.__code__)


def test_a_tail_whose_word_returns_after_the_run_ended_ends_as_the_run_did() -> None:
    """The host word of a tail call returns once the run is over (its time limit): the
    embedder's thread gets the run's end, as from a callback's answer that came too late,
    never the word's value."""
    done, seen = threading.Event(), []

    def slow() -> dict[str, int]:
        done.wait(30)  # a hang guard: the test sets it once the run has ended
        return {"n": 1}

    box = Sandbox(host={"w": calls_back_on_a_thread(seen, wait=False), "slow": slow},
                  limits=Limits(seconds=0.5), isolation="process")  # fmt: skip
    with pytest.raises(PlanLimitError):
        box.run("w(lambda: slow())\nwhile True:\n    pass\n")
    done.set()
    for _ in range(300):
        if seen:
            break
        threading.Event().wait(0.1)
    assert len(seen) == 1 and isinstance(seen[0], PlanLimitError), seen


@pytest.fixture
def pool(probe_pool: Pool) -> Pool:
    return probe_pool  # the session's (conftest.py)


def test_a_plan_process_takes_as_a_tail_only_a_copy_of_a_host_words_answer(pool: Pool) -> None:
    """A compromised plan process asks for a tail call for the callback it was sent: the
    host word's thread that called back gets that word's plain answer, as a copy; nothing
    the plan's process wrote is taken as the answer."""
    plain = {"k": [1, 2]}
    results: list[Any] = []
    frames = "[['q', 50, ask[1], 'tail', [box.host['v'].fn.wid, [], {'d': []}, None]]]"
    box = lane_probe(pool, frames, w=calls_back_on_a_thread(results), v=lambda: plain)
    with pytest.raises(PlanLimitError):
        box.run("result = [w, v]\n")  # the probe sleeps past the time limit
    assert results == [plain] and results[0] is not plain


def test_a_tail_for_a_request_the_host_did_not_make_breaks_the_protocol(pool: Pool) -> None:
    results: list[Any] = []
    frames = "[['q', 50, ask[1] + 7, 'tail', [box.host['v'].fn.wid, [], {'d': []}, None]]]"
    box = lane_probe(pool, frames, seconds=20, w=calls_back_on_a_thread(results), v=lambda: 1)
    with pytest.raises(PlanLimitError) as ended:
        box.run("result = [w, v]\n")
    assert ended.value.kind == "crash", ended.value
    assert len(results) == 1 and isinstance(results[0], PlanLimitError)


def test_an_error_after_a_tail_call_names_the_line_of_that_call(tails: list[bool]) -> None:
    """The plan's process unwinds a tail's callback before its answer comes (nothing of it is
    left to run); an error the answer brings still names the plan line of the call, as in one
    process, when it ends the run."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="test-fan")

    def fan_out(thunks: list[Callable[[], Any]]) -> list[Any]:
        return list(pool.map(lambda thunk: thunk(), thunks))  # the first error ends the run

    def fails() -> Any:
        raise ValueError("no answer")

    source = "thunk = (lambda:\n    fails())\nresult = fan_out([thunk])\n"
    lines = []
    for mode in MODES:
        box = Sandbox(host={"fan_out": fan_out, "fails": fails}, limits=Limits(seconds=20),
                      isolation=mode)  # fmt: skip
        with pytest.raises(PlanError) as raised:
            box.run(source)
        lines.append((type(raised.value).__name__, raised.value.line))
    pool.shutdown()
    assert tails == [False]  # asked for as a tail; its error went back to the plan's process
    assert lines[1] == lines[0]
    assert lines[0][1] == 2
