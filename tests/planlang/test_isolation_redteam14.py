"""Red team 14: the host of isolated plans, attacked through the embedding API, the runtime's
agent words, and from a plan process the language layer no longer holds (``probe_prelude``).
Each case failed on main (fec3f47) before its fix; deadlines here are hang guards only, never
the thing measured.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from planlang.errors import PlanLimitError
from planlang.gate import Gate, Policy, execute
from planlang.sandbox.limits import Limits
from runtime import LLM, Budget, Ledger, Reply, Run, Settings

HANG_GUARD = 20.0


# -- billing: a host call the run outlived ----------------------------------------------------

SETTINGS = Settings(max_agents=20, default_price=0.01, concurrency=4)
PLAN = (
    "a = agent('judge this', schema={'type': 'object', 'properties': {'v': {'type': 'string'}},"
    " 'required': ['v']})\nresult = a['v']\n"
)


@pytest.fixture(scope="module")
def approved(tmp_path_factory: pytest.TempPathFactory) -> Any:
    gate = Gate(Policy(max_ceiling=1000, max_median=100),
                store=tmp_path_factory.mktemp("gate") / "gate.db", settings=SETTINGS, seeds=1,
                isolation="process")  # fmt: skip
    decision = gate.submit(PLAN)
    assert decision.approved, decision.reasons
    return decision.plan


def _settled(run: Run) -> None:
    deadline = time.monotonic() + HANG_GUARD
    while any(r.status == "running" for r in run.threads) and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_worker_the_run_outlived_pays_for_no_repair_turn(approved: Any, tmp_path: Any) -> None:
    """The plan's ``agent`` call blocks in the model past the plan's deadline: under process
    isolation the plan's process is killed at the limit plus the grace and the run ends
    (``failed``, its ``run_finished`` event and accounting written), while the call goes on on
    a host thread. When its answer comes and does not fit the schema, the worker went on
    talking for a run that is over: a repair turn, a second paid call whose answer nobody can
    ever get (in one process the run has not ended while its plan's word runs). The call in
    flight is paid once and kept (``test_isolation_run.py``); nothing more is asked."""
    calls: list[str] = []
    release = threading.Event()

    def slow_then_wrong(model: str, messages: Any, **params: Any) -> Reply:
        calls.append(model)
        if len(calls) == 1:
            release.wait(HANG_GUARD)  # answers long after the plan's deadline, and wrong
            return Reply('{"w": 1}')
        return Reply('{"v": "ok"}')

    llm = LLM(Ledger(tmp_path / "answers.db"), client=slow_then_wrong, budget=Budget(100),
              settings=SETTINGS)  # fmt: skip
    run = Run("outlived", llm=llm, settings=SETTINGS)
    run.start(lambda r: execute(approved, r, limits=Limits(seconds=1)))
    with pytest.raises(PlanLimitError) as ended:
        run.wait(timeout=HANG_GUARD)
    assert ended.value.kind == "seconds"
    assert run.status == "failed"
    finished = run.accounting.to_dict()["total"]["credits"]
    release.set()
    _settled(run)
    assert len(calls) == 1, f"{len(calls)} model calls for a run that ended before the first"
    assert llm.budget.snapshot()[0] == pytest.approx(0.01)
    assert finished == 0  # what the run said it spent when it ended: the call was in flight


def test_a_worker_the_run_outlived_is_not_admitted_at_a_raised_cap(
    approved: Any, tmp_path: Any
) -> None:
    """The plan's second ``agent`` call waits at a spent cap when the plan's time runs out:
    the run ends, its call still waiting on a host thread. The embedder raises the cap for
    its next run on the same front door; the waiting call of the run that ended was admitted
    and paid, out of the next run's credits. In one process the run cannot end while its
    plan waits at the cap (a stuck run is cancelled: ``wait_for(stop_when_spent=True)``)."""
    calls: list[str] = []

    def model(name: str, messages: Any, **params: Any) -> Reply:
        calls.append(name)
        return Reply('{"v": "ok"}')

    llm = LLM(Ledger(tmp_path / "answers.db"), client=model, budget=Budget(0.01),
              settings=SETTINGS)  # fmt: skip
    twice = PLAN.replace("result = a['v']", "b = agent('again', schema={'type': 'object'})\n"
                         "result = a['v']")  # fmt: skip
    gate = Gate(Policy(max_ceiling=1000, max_median=100), store=tmp_path / "gate.db",
                settings=SETTINGS, seeds=1, isolation="process")  # fmt: skip
    plan = gate.submit(twice).plan
    assert plan is not None
    run = Run("at the cap", llm=llm, settings=SETTINGS)
    run.start(lambda r: execute(plan, r, limits=Limits(seconds=1)))
    with pytest.raises(PlanLimitError) as ended:
        run.wait(timeout=HANG_GUARD)
    assert ended.value.kind == "seconds"
    assert len(calls) == 1
    llm.budget.raise_to(1.0)  # for the next run
    time.sleep(0.5)  # the waiting call, were it admitted, is sent within this
    _settled(run)
    assert len(calls) == 1, "a call of a run that had ended was paid at the raised cap"
    assert llm.budget.snapshot()[0] == pytest.approx(0.01)


# -- the same plan, both modes -----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["inprocess", "process"])
@pytest.mark.parametrize("plan", ["result = w()", "result = f(lambda: w())", "result = [w()]"])
def test_a_host_words_read_only_mapping_is_plain_data_in_both_modes(mode: str, plan: str) -> None:
    """A host word that returns a mapping that is not a dict (``types.MappingProxyType``, a
    read-only view of its config; a ``ChainMap``): one process copies it in as a dict, as it
    does any ``Mapping``. Under process isolation the codec took only dict subclasses, and
    the same plan failed with "gave a mappingproxy, which is not plain data"."""
    import collections
    import types

    from planlang.sandbox.inprocess import Sandbox

    config = {"model": "small", "n": [1, 2]}
    host = {"w": lambda: types.MappingProxyType(config), "f": lambda g: g()}
    box = Sandbox(host=host, limits=Limits(seconds=5), isolation=mode)
    want = [config] if plan.startswith("result = [") else config
    assert box.run(plan + "\n") == want
    host["w"] = lambda: collections.ChainMap({"n": [1, 2]}, {"model": "small"})
    assert Sandbox(host=host, limits=Limits(seconds=5), isolation=mode).run(plan + "\n") == want


CAUGHT = [
    ('def bad():\n    raise ValueError("no")\nresult = safe(bad)\n', "ValueError", "no"),
    ('result = safe(lambda: {}["k"])\n', "KeyError", "'k'"),
    ("result = safe(lambda: 1 // 0)\n", "ZeroDivisionError", "integer division or modulo by zero"),
    ("result = safe(lambda: [][1])\n", "IndexError", "list index out of range"),
    ('def bad():\n    raise LookupError("x")\nresult = safe(bad)\n', "LookupError", "x"),
]


@pytest.mark.parametrize("mode", ["inprocess", "process"])
@pytest.mark.parametrize(("plan", "kind", "text"), CAUGHT)
def test_a_host_word_catches_a_plan_functions_error_by_its_type_in_both_modes(
    mode: str, plan: str, kind: str, text: str
) -> None:
    """A host word that guards a plan function with ``except (KeyError, ValueError, ...)``
    (a fan-out with a fallback, a retry on a bad value) catches the plan's error in one
    process. Under process isolation the error crossed as a class of that name made on
    ``Exception`` alone: no such handler caught it, and the plan failed with it instead."""
    from planlang.sandbox.inprocess import Sandbox

    def safe(f: Any) -> Any:
        try:
            return f()
        except (ArithmeticError, LookupError, ValueError) as error:
            return ["caught", type(error).__name__, str(error)]

    box = Sandbox(host={"safe": safe}, limits=Limits(seconds=5), isolation=mode)
    assert box.run(plan) == ["caught", kind, text]


# -- frames a compromised plan process sends ---------------------------------------------------


def test_a_long_json_number_does_not_freeze_a_host_without_a_digit_limit(probe_pool: Any) -> None:
    """A plan's process that skips its layers writes a request whose argument is a JSON
    number of 2,000,000 digits. orjson declines it (past a double), so the host reads the
    frame with the standard library's json, whose ``int()`` of the digits is bounded only by
    the interpreter's ``sys.int_max_str_digits``: a host that set it to 0 (a library doing
    big-number work does) converted them in quadratic time with the interpreter's lock held,
    about 15 s here during which no thread of the host ran and the plan's process was not
    killed at its deadline; and the host word was then handed a 6.6-million-bit int (a list
    of scalars is not walked, so ``int_bits`` never looked at it). Now the frame's numbers
    are bounded by the reader itself: the run ends at once as a protocol break."""
    import sys

    from probe_prelude import CHANNEL, probed

    got: list[int] = []

    def w(*args: Any) -> int:
        got.extend(a.bit_length() for a in args if type(a) is int)
        return 0

    probe = CHANNEL + (
        "import struct, time\n"
        "digits = b'9' * 2_000_000\n"
        "body = (b'[\"q\",9,' + str(R).encode() + b',\"call\",[' + str(wid).encode() + b',['\n"
        "        + digits + b'],{\"d\":[]},null]]')\n"
        "os_write = __import__('os').write\n"
        "data = struct.pack('>Id', len(body), time.monotonic()) + body\n"
        "sent = 0\n"
        "while sent < len(data):\n"
        "    sent += os_write(ep._writer, data[sent:])\n"
        "reply = ep._reader.read()\nresult = reply\n"
    )
    box = probed(probe_pool, probe, Limits(seconds=2), w=w)
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        started = time.monotonic()
        with pytest.raises(PlanLimitError):
            box.run("result = w\n")
        took = time.monotonic() - started
    finally:
        sys.set_int_max_str_digits(before)
    assert not got or max(got) <= 200_000, f"a host word got an int of {max(got):,} bits"
    assert took < 2 + 1 + 3, f"the host took {took:.1f} s to end a 2 s plan"


# -- host code a plan's schema drives ----------------------------------------------------------


def test_a_schemas_pattern_does_not_freeze_the_host_while_pricing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A plan's worker schema names a ``pattern`` that backtracks without bound on a run of
    one letter (``^(a+)+b$``) and a ``minLength`` of 27. The rehearsal's stand-in, host code
    under every isolation mode, tries ``re.search(pattern, "a" * 27)``: 2**27 steps in C with
    the interpreter's lock held, 3.5 s here for one try (it tries 8 times, and 30 letters
    would be 40 s each) during which no thread of the host runs, its wall clock and the
    killing of the plan's process included. A model's answer of such a string meets the same
    pattern in the worker's jsonschema validation, in a real run. The host should stay
    responsive: a heartbeat thread of the host never waits a second."""
    import planlang
    from planlang import standin

    monkeypatch.setattr(standin, "_TRIES", 1)  # one try: the test's own time bounded
    beats: list[float] = [time.monotonic()]  # from the start to the end: a fast price too
    stop = threading.Event()

    def heartbeat() -> None:
        while not stop.is_set():
            beats.append(time.monotonic())
            time.sleep(0.02)

    source = ("r = agent('x', schema={'type': 'object', 'properties': {'v': {'type': 'string',"
              " 'pattern': '^(a+)+b$', 'minLength': 27, 'maxLength': 27}}, 'required': ['v']})"
              "\nresult = r\n")  # fmt: skip
    beating = threading.Thread(target=heartbeat, daemon=True)
    beating.start()
    try:
        planlang.price(source, settings=Settings(), seeds=1, limits=Limits(seconds=2))
    finally:
        stop.set()
        beating.join(HANG_GUARD)
        beats.append(time.monotonic())
    longest = max(b - a for a, b in zip(beats, beats[1:], strict=False))
    assert longest < 1.0, f"the host did not run for {longest:.1f} s"


def _resident() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


@pytest.mark.parametrize("schema", [
    "{'type': 'array', 'minItems': 300, 'items': {'type': 'array', 'minItems': 300, 'items':"
    " {'type': 'array', 'minItems': 300, 'items': {'type': 'integer'}}}}",
    "{'type': 'object', 'properties': {'v': {'type': 'string', 'minLength': 3000000}},"
    " 'required': ['v']}",
])  # fmt: skip
def test_a_schemas_least_answer_is_not_built_in_the_host_while_pricing(schema: str) -> None:
    """A plan's worker schema that asks for an answer of 27 million items (three nested
    ``minItems`` of 300), or a string of 3 million characters: the rehearsal's stand-in, host
    code under every isolation mode, built it, its text and its parse in the host, whatever
    the plan's limits. The host grew by about 560 MB for a plan of ``memory_mb=256`` (1,000
    a level is 10**9 items: the host's memory, not the plan's, runs out), and the string was
    grown by ``+=`` in quadratic time (400,000 characters took 1.8 s of the host's CPU, 3
    million minutes). A model's reply is bounded by its tokens; the stand-in now refuses a
    schema whose least answer is past a million items or characters, as a worker's failure
    in the price, at once."""
    import planlang

    peak = [0]
    start = _resident()
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _resident() - start)
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    began = time.monotonic()
    try:
        report = planlang.price(f"r = agent('x', schema={schema})\nresult = 1\n",
                                settings=Settings(), seeds=1,
                                limits=Limits(seconds=2, memory_mb=256))  # fmt: skip
        time.sleep(1.0)  # a host thread the price returned from may still be building it
    finally:
        stop.set()
        sampler.join(HANG_GUARD)
    took = time.monotonic() - began
    assert peak[0] < 200 * 2**20, f"the host grew by {peak[0] >> 20} MB"
    assert took < 2 + 1 + 1 + 3, f"pricing took {took:.1f} s"
    assert [p.kind for p in report.problems] == ["worker"], report.problems


def test_a_tuple_that_holds_itself_through_a_list_reaches_a_host_word_in_both_modes() -> None:
    """``t = ([],)`` then ``t[0].append(t)``: a tuple that holds itself through a list, which
    the language lets a plan make. As the run's result it crosses (the plan's process copies
    the result first, as ``thaw`` does, and the copy's cycle runs through the list alone); as
    a host word's argument it is sent as it is, and the host's decoder refuses the reference
    back to the tuple it is still decoding: the plan fails with "A tuple or set that holds
    itself cannot cross", where in one process the word gets the value."""
    from planlang.sandbox.inprocess import Sandbox

    def w(value: Any) -> bool:
        return value[0][0] is value or value[0][0][0] is value[0]

    plan = "t = ([],)\nt[0].append(t)\nresult = w(t)\n"
    assert Sandbox(host={"w": w}, limits=Limits(seconds=5), isolation="inprocess").run(plan)
    assert Sandbox(host={"w": w}, limits=Limits(seconds=5), isolation="process").run(plan)
