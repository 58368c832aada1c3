"""The tool front door (runtime.tools): ledger, index of identical calls, in-flight marks,
replay, stand-in, budget and accounting, with a scripted ``send`` instead of a server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runtime import LLM, Budget, Ledger, OutcomeUnknown, Run, RunError, Settings, ToolError
from runtime.reply import Reply
from runtime.tools import ToolCacheMiss, ToolSpec, forget_in_flight, tool_door, tool_key

APPEND = ToolSpec("files", "append", price=0.5, read_only=False, destructive=False)
SET = ToolSpec("files", "set", idempotent=True)


class Server:
    """Counts what reached it; ``fail`` makes the next call raise it."""

    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.fail: BaseException | None = None

    def send(self, arguments: Any) -> Any:
        def call() -> Any:
            self.sent.append(arguments)
            if self.fail is not None:
                raise self.fail
            return {"n": len(self.sent)}

        return call


def run_with(ledger: Ledger | None, **llm: Any) -> Run:
    return Run("tools", llm=LLM(ledger, **llm))


def call(run: Run, server: Server, arguments: Any, spec: ToolSpec = APPEND) -> Any:
    return run.run_sync(lambda r: tool_door(r).call(spec, arguments, send=server.send(arguments),
                                                    standin=lambda: "stand-in"))  # fmt: skip


def test_a_rerun_answers_from_the_ledger_and_identical_calls_are_distinct(tmp_path: Path) -> None:
    server = Server()
    with Ledger(tmp_path / "a.db") as ledger:

        def plan(run: Run) -> list[Any]:
            door = tool_door(run)
            return [door.call(APPEND, {"line": "x"}, send=server.send("x"), standin=str)
                    for _ in range(2)]  # fmt: skip

        first = Run("one", llm=LLM(ledger)).run_sync(plan)
        second = Run("two", llm=LLM(ledger)).run_sync(plan)
    assert first == second == [{"n": 1}, {"n": 2}]
    assert server.sent == ["x", "x"]  # two identical calls made once each, none again


def test_the_fingerprint_covers_server_tool_arguments_and_index() -> None:
    keys = {tool_key("s", "t", {"a": 1}, 0), tool_key("s", "t", {"a": 1}, 1),
            tool_key("s", "u", {"a": 1}, 0), tool_key("r", "t", {"a": 1}, 0),
            tool_key("s", "t", {"a": 2}, 0)}  # fmt: skip
    assert len(keys) == 5
    assert tool_key("s", "t", {"a": 1, "b": 2}, 0) == tool_key("s", "t", {"b": 2, "a": 1}, 0)


def test_a_call_in_flight_at_a_crash_is_not_repeated_unless_idempotent(tmp_path: Path) -> None:
    server = Server()
    server.fail = ConnectionError("the server went away")  # the outcome is unknown
    with Ledger(tmp_path / "a.db") as ledger:
        with pytest.raises(ConnectionError):
            call(run_with(ledger), server, {"line": "x"})
        with pytest.raises(ConnectionError):
            call(run_with(ledger), server, {"k": 1}, SET)
        server.fail = None
        with pytest.raises(OutcomeUnknown, match=r"files\.append\(\{'line': 'x'\}\)"):
            call(run_with(ledger), server, {"line": "x"})
        assert call(run_with(ledger), server, {"k": 1}, SET) == {"n": 3}  # idempotent: again
        assert server.sent == [{"line": "x"}, {"k": 1}, {"k": 1}]
        assert forget_in_flight(tmp_path / "a.db") == ["files.append"]
        assert call(run_with(ledger), server, {"line": "x"}) == {"n": 4}


def test_a_tool_error_is_a_known_outcome_and_is_not_stored(tmp_path: Path) -> None:
    server = Server()
    server.fail = ToolError("no such file")
    with Ledger(tmp_path / "a.db") as ledger:
        run = run_with(ledger, budget=Budget(10))
        with pytest.raises(ToolError):
            call(run, server, {"line": "x"})
        assert run.llm.budget.spent == 0 and len(ledger) == 0
        server.fail = None
        assert call(run_with(ledger), server, {"line": "x"}) == {"n": 2}  # sent again, no stop


def test_replay_sends_nothing_and_misses_end_the_run(tmp_path: Path) -> None:
    server = Server()
    with Ledger(tmp_path / "a.db") as ledger:
        call(run_with(ledger), server, {"line": "x"})
        assert call(run_with(ledger, mode="replay"), server, {"line": "x"}) == {"n": 1}
        with pytest.raises(ToolCacheMiss, match="files.append"):
            call(run_with(ledger, mode="replay"), server, {"line": "y"})
    assert server.sent == [{"line": "x"}]


def test_a_rehearsal_uses_the_stand_in_and_counts_what_it_would_cost() -> None:
    server = Server()
    standin = lambda model, messages, **params: Reply(text="")  # noqa: E731
    run = run_with(None, standin=standin)
    assert call(run, server, {"line": "x"}) == "stand-in"
    assert server.sent == []
    tally = run.accounting.to_dict()["tools"]["files.append"]
    assert tally["calls"] == 1 and tally["standin"] == 1 and tally["would_credits"] == 0.5
    assert run.accounting.to_dict()["total"]["would_credits"] == 0.5


def test_tools_pay_from_the_same_budget_and_count_per_tool(tmp_path: Path) -> None:
    server = Server()
    with Ledger(tmp_path / "a.db") as ledger:
        run = run_with(ledger, budget=Budget(10))
        call(run, server, {"line": "x"})
        assert run.llm.budget.spent == 0.5
        accounting = run.accounting.to_dict()
        assert accounting["tools"]["files.append"]["credits"] == 0.5
        assert accounting["phases"]["main"]["sent"] == 1 and accounting["roles"] == {}


def test_a_run_stops_at_max_tool_calls() -> None:
    server = Server()
    run = Run("tools", llm=LLM(None), settings=Settings(max_tool_calls=1))

    def plan(run: Run) -> None:
        door = tool_door(run)
        for i in range(3):
            door.call(APPEND, {"i": i}, send=server.send(i), standin=str)

    with pytest.raises(Exception, match="past max_tool_calls=1"):
        run.run_sync(plan)
    assert server.sent == [0]


def test_without_a_ledger_a_call_is_sent_each_time() -> None:
    server = Server()
    assert call(run_with(None), server, {"line": "x"}) == {"n": 1}
    assert call(run_with(None), server, {"line": "x"}) == {"n": 2}


def test_a_run_with_a_tool_door_is_freed_once_nothing_else_holds_it() -> None:
    """The door is the value of its run's weak key: holding the run itself kept both, and every
    rehearsal's run with its workers, alive for good (a price leaked them all)."""
    import gc
    import weakref

    run = run_with(None, standin=lambda model, messages, **params: Reply(text=""))
    assert call(run, Server(), {"line": "x"}) == "stand-in"
    door = tool_door(run)
    gone = weakref.ref(run)
    del run
    gc.collect()
    assert gone() is None
    with pytest.raises(RunError, match="has ended"):  # a door kept past its run says so
        door.cancelled()
