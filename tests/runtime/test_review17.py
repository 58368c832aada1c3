"""Review 17: the worker's size checks (schema, data) of a29f1ae, 70ac2ca and 0a28c09.

Each test fails on the code reviewed and passes once its defect is mended. A plan is written
by an adversary: every value here is one a plan can make in a few lines.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema.exceptions import SchemaError

from runtime import LLM, Ledger, Reply, Run
from runtime.json_schema import SCHEMA_MOST, check_size
from runtime.worker import DATA_MOST, check_sizes


def _run(answer: str = '{"a": "x"}') -> tuple[Run, list[int]]:
    """A run whose model answers ``answer``; the list gets the length of each call's text."""
    asked: list[int] = []

    def client(model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        asked.append(sum(len(m["content"]) for m in messages))
        return Reply(text=answer)

    return Run("review17", llm=LLM(Ledger(":memory:"), client=client)), asked


# -- 1. a scalar counts as one value however long it is written out ------------------------

_MEGA = "x" * 1_000_000  # one string of a million characters: `"x" * 1000000` in a plan


@pytest.mark.parametrize(
    "data",
    [
        pytest.param([_MEGA] * 999_999, id="one-long-string-999999-times"),  # 10**12 chars
        pytest.param([{_MEGA: 0}] * 400_000, id="one-long-key-400000-times"),  # 4 * 10**11
        pytest.param([10**4000] * 999_999, id="one-4000-digit-int-999999-times"),  # 4 * 10**9
    ],
)
def test_data_of_one_long_scalar_held_many_times_is_too_large(data: Any) -> None:
    """Each is under DATA_MOST values, yet its text is gigabytes to a terabyte: the check's
    promise ("in time bounded by the limit: their text would be as long") does not hold, and
    json.dumps of it holds the host (in-process, for good; under isolation up to a 256 MB
    frame, 100 MB of it priced as a plain worker in 17 s)."""
    with pytest.raises(ValueError, match="too large"):
        check_sizes(None, data)


def test_a_schema_of_one_long_string_held_many_times_is_too_large() -> None:
    """9,001 values, 9 GB of text: shown to the model, keyed, and listed back whole by
    jsonschema's "is not one of" in the repair turn (100 copies: a 200 MB second call)."""
    with pytest.raises(SchemaError, match="too large"):
        check_size({"type": "string", "enum": [_MEGA] * 9_000})


# -- 2. written_past is not bounded by `most`: a wide container that holds itself -----------


class _Counted(list[Any]):
    """A list that counts the items taken from it by iteration (a stand-in for the plan's
    plain list, whose walk the check's own code cannot count)."""

    taken = 0

    def __iter__(self) -> Iterator[Any]:
        for item in super().__iter__():
            _Counted.taken += 1
            yield item


def test_the_size_check_of_a_wide_list_that_holds_itself_takes_work_bounded_by_the_limit() -> None:
    """`x = [0] * 300; x.append(x)` as a worker's data: each of the million values counted
    pushes the whole list again, 3 * 10**8 stack entries; `planlang price` of that plan took
    56 s and 4.6 GB of the host (3,000 wide: 30 GB). Here a 200-wide schema enum."""
    wide = _Counted([0] * 200)
    wide.append(wide)
    _Counted.taken = 0
    with pytest.raises(SchemaError, match="too large"):
        check_size({"enum": wide})
    assert _Counted.taken <= 3 * SCHEMA_MOST  # the reviewed code takes 2,010,000


# -- 3. the prompt and the system text are not bounded -------------------------------------


def test_a_prompt_of_shared_lists_is_not_written_out_as_text() -> None:
    """`agent(x)` with x 20 shared lists deep: str(prompt) makes 2**20 leaves of text (2 s,
    10 MB here; each level doubles it, 30 levels hold the host for good), past the very bound
    data has. 22 levels priced in 23 s with "No problems met in rehearsal"."""
    prompt: list[Any] = ["x"]
    for _ in range(20):
        prompt = [prompt, prompt]
    assert 2**21 > DATA_MOST
    run, asked = _run("ok")
    try:
        run.run_sync(lambda r: r.agent(prompt))  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - a clear refusal that ends the plan is a mend too
        pass
    assert asked == []
    assert all(record.status != "done" for record in run.threads)


def test_a_system_text_that_is_not_text_fails_the_worker_with_why() -> None:
    """`agent("q", system=["be brief"])`: a TypeError from str.join escapes the worker as an
    internal error; `planlang price` reports it as a crash of the plan, "sequence item 0:
    expected str instance, list found", naming neither system nor the worker."""
    run, _asked = _run("ok")
    # the reviewed code raises
    run.run_sync(lambda r: r.agent("q", system=["be brief"]))  # type: ignore[arg-type]
    [record] = run.threads
    assert "internal error" not in str(record.error)


# -- 4. a deep but small schema or data crashes the run --------------------------------------


def _deep_schema(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        node = {"items": node}
    return node


def test_a_deep_schema_within_the_size_bound_fails_the_worker_not_the_run() -> None:
    """9,001 values, within SCHEMA_MOST: check_schema says "nests too deeply to be checked",
    but _talk makes its text first, and the encoder's RecursionError escapes the worker as an
    internal error (the embedder's run_sync raises it; `planlang price` reports "limit: depth:
    The plan nested calls deeper than Python allows" for a plan that nested no call)."""
    run, asked = _run()
    assert run.run_sync(lambda r: r.agent("q", schema=_deep_schema(9_000))) is None
    [record] = run.threads
    assert record.status == "failed" and "internal error" not in str(record.error)
    assert asked == []


def test_deep_data_within_the_size_bound_does_not_crash_the_run() -> None:
    """50,001 values, well within DATA_MOST: the encoder's RecursionError escapes the worker."""
    data: list[Any] = []
    for _ in range(50_000):
        data = [data]
    run, _asked = _run("ok")
    run.run_sync(lambda r: r.agent("q", data=data))  # the reviewed code raises RecursionError
    [record] = run.threads
    assert "internal error" not in str(record.error)


# -- 5. a schema that is not plain JSON crashes the run (data of the same gets a clear why) --


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param({"enum": [{1, 2}]}, id="a-set"),
        pytest.param({"type": "object", "properties": {1: {}, "a": {}}}, id="an-int-key"),
    ],
)
def test_a_schema_that_is_not_plain_json_fails_the_worker_with_why(schema: Any) -> None:
    """check_sizes lets it by, then shown_json(schema) raises TypeError outside any handler:
    an internal error that ends the plan (`planlang price`: "crash: TypeError: Object of type
    set is not JSON serializable"). The same value as data fails the worker: "The worker's
    data is not plain JSON data: ..."."""
    run, asked = _run()
    assert run.run_sync(lambda r: r.agent("q", schema=schema)) is None  # reviewed: raises
    [record] = run.threads
    assert record.status == "failed" and "internal error" not in str(record.error)
    assert "schema" in str(record.error)
    assert asked == []
