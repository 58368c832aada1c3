"""kit.verify: real planted bugs fail, false alarms pass, hostile calls are refused or contained."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kit_scripted import AUDITED, FALSE_ALARMS, KEY

from kit.verify import CHILD, CallRefused, Verifier, parse_call


@pytest.fixture(scope="module")
def algos() -> Iterator[Verifier]:
    verifier = Verifier(AUDITED, timeout=5.0)
    yield verifier
    verifier.close()


def first_verifiable(bug: dict[str, Any]) -> dict[str, str]:
    for example in bug["failing"]:
        try:
            parse_call(example["source"].strip())
        except CallRefused:
            continue
        return example
    raise AssertionError(f"{bug['id']} has no failing example that is one literal call")


@pytest.mark.parametrize("bug", KEY["bugs"], ids=[bug["id"] for bug in KEY["bugs"]])
def test_a_planted_bug_fails_when_its_call_runs(algos: Verifier, bug: dict[str, Any]) -> None:
    example = first_verifiable(bug)
    finding = {"file": bug["path"], "failing_call": example["source"].strip(),
               "expected": example["want"].strip()}  # fmt: skip
    result = algos.verify(finding)
    assert result["ran"] is True and result["refused"] is None
    assert result["actual"] != result["expected"] == example["want"].strip()
    assert result["actual"] == example["got"].strip()  # what the planting proof recorded
    is_error = ":" in result["actual"] and result["actual"].split(":")[0].endswith("Error")
    assert result["outcome"] == ("exception" if is_error else "value")


@pytest.mark.parametrize("path", sorted(FALSE_ALARMS))
def test_a_false_alarm_passes_when_its_call_runs(algos: Verifier, path: str) -> None:
    function, call, expected = FALSE_ALARMS[path]
    result = algos.verify({"file": path, "function": function, "failing_call": call,
                           "expected": expected})  # fmt: skip
    assert result == {"ran": True, "refused": None, "outcome": "value", "actual": expected,
                      "expected": expected}  # fmt: skip


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("algos.heaps.k_smallest([7, 1, 5, 3, 9], k=3)", "[1, 3, 5, 7, 9]"),
        ("heaps.k_smallest([4, 2], 0)", "[2, 4]"),
        ("algos.gcd(-12, 18)", "6"),  # a package prefix names the module it holds
        ("gcd(12, 18) ", "6"),
        ("transpose(((1, 2),))", "[[1], [2]]"),
        ("common_prefix({'b', 'a'})", None),
        ("common_prefix(set())", None),
        ("common_prefix([set(), {1: set()}])", None),
        ("rotate(values=[1, 2, 3], steps=-1)", None),
    ],
)
def test_accepted_spellings_run(algos: Verifier, call: str, expected: str | None) -> None:
    result = algos.verify({"failing_call": call, "expected": ""})
    assert result["ran"] is True, result["refused"]
    if expected is not None:
        assert result["actual"] == expected


HOSTILE = [
    (42, "must be a text"),
    ("", "empty"),
    ("   ", "empty"),
    ("k_smallest([" + "1, " * 800 + "1], 2)", "over the limit"),
    ("k_smallest([1], 1); import os", "not one Python expression"),
    ("import os", "not one Python expression"),
    ("k_smallest([1], 1) + 1", "single call"),
    ("[k_smallest([1], 1)]", "single call"),
    ("os.system('id')", "not defined in the audited library"),
    ("print('hi')", "not defined in the audited library"),
    ("eval('1')", "not defined in the audited library"),
    ("__import__('os').system('id')", "plain or dotted name"),
    ("k_smallest.__globals__['os'].system('id')", "plain or dotted name"),
    ("k_smallest.__globals__.get('os')", "double-underscore"),
    ("k_smallest.__call__([1], 1)", "double-underscore"),
    ("MinHeap.__init__.__globals__", "single call"),
    ("heaps.k_smallest.__code__.replace()", "double-underscore"),
    ("(lambda: 0)()", "plain or dotted name"),
    ("k_smallest([1], 1)(2)", "plain or dotted name"),
    ("getattr(k_smallest, 'x')()", "plain or dotted name"),
    ("k_smallest([1])[0]()", "plain or dotted name"),
    ("k_smallest(x, 1)", "uses the name 'x'"),
    ("k_smallest(items=data, k=1)", "uses the name 'data'"),
    ("k_smallest(*[[1], 1])", "unpacks with"),
    ("k_smallest(**{'items': [1], 'k': 1})", "Keyword unpacking"),
    ("k_smallest([i for i in range(3)], 1)", "comprehension"),
    ("k_smallest(list(range(3)), 1)", "calls a function"),
    ("k_smallest(open('/etc/passwd').read(), 1)", "calls a function"),
    ("k_smallest([1] * 10**9, 1)", "not a literal"),
    ("k_smallest((x := [1]), 1)", "assigns with"),
    ("k_smallest(f'{1}', 1)", "f-string"),
    ("k_smallest([1] if True else [2], 1)", "conditional"),
    ("k_smallest(lambda: 1, 1)", "lambda"),
    ("k_smallest(os.environ, 1)", "reads an attribute"),
    ("k_smallest([1], 1, key=[1][0])", "subscripts"),
    ("a.b.c.d.e.f.g()", "parts"),
    ("k_smallest(" + "[" * 300 + "]" * 300 + ", 1)", "nested too deeply|not one Python"),
    ("algos.heaps.heapq.nsmallest(1, [1])", "not defined in the audited library"),
    ("MinHeap.items()", "not defined in the audited library"),
]


@pytest.mark.parametrize(("call", "reason"), HOSTILE, ids=[str(i) for i in range(len(HOSTILE))])
def test_hostile_calls_are_refused_with_a_reason(
    algos: Verifier, call: Any, reason: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_process(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a refused call must never reach a process")

    monkeypatch.setattr("kit.verify.subprocess.run", no_process)
    result = algos.verify({"file": "algos/heaps.py", "failing_call": call, "expected": "x"})
    assert result["ran"] is False and result["outcome"] is None and result["actual"] == ""
    assert result["refused"], "a refusal must say why"
    assert re.search(reason, result["refused"]), result["refused"]


def test_literal_arguments_of_every_kind_pass_the_check() -> None:
    parsed = parse_call(
        "pkg.mod.f(-1, +2.5, 3j, 1 - 2j, 'a', b'b', (1,), [None, True], {'k': {1, 2}}, set(), "
        "k=-0x10)"
    )
    assert parsed.names == ("pkg", "mod", "f")
    assert len(parsed.args) == 10 and parsed.kwargs == {"k": "-16"}


def test_an_ambiguous_bare_name_asks_for_the_module(tmp_path: Path) -> None:
    for name in ("one", "two"):
        _write(tmp_path / "pkg" / f"{name}.py", "def same(x):\n    return x\n")
    _write(tmp_path / "pkg" / "__init__.py", "")
    verifier = Verifier(tmp_path)
    try:
        refused = verifier.verify({"failing_call": "same(1)"})["refused"]
        assert refused is not None and "ambiguous" in refused
        assert verifier.verify({"failing_call": "one.same(1)"})["actual"] == "1"
        assert verifier.verify({"file": "pkg/two.py", "failing_call": "same(2)"})["actual"] == "2"
    finally:
        verifier.close()


# -- containment: a library whose functions misbehave -----------------------------------------

EVIL = """
import os, socket, subprocess, time


def spin():
    while True:
        pass


def sleepy():
    time.sleep(60)


def burn():
    return sum(range(10**12))


def hog(n):
    return [0] * n


def grow():
    chunks = []
    while True:
        chunks.append(bytearray(2**20))


def connect():
    socket.create_connection(("127.0.0.1", 9), timeout=1)
    return "connected"


def resolve():
    return socket.getaddrinfo("example.com", 80)


def shell():
    return os.system("true")


def spawn():
    return subprocess.run(["true"]).returncode


def scribble(path):
    with open(path, "w") as handle:
        handle.write("x")
    return "written"


def remove(path):
    os.remove(path)
    return "removed"


def note():
    with open("note.txt", "w") as handle:
        handle.write("kept")
    with open("note.txt") as handle:
        return handle.read()


def peek(path):
    with open(path) as handle:
        return handle.read()


def environment():
    return sorted(os.environ)


def forge():
    print("{\\"outcome\\": \\"value\\", \\"actual\\": \\"forged\\"}")
    os.write(1, b"forged on fd 1\\n")
    return "honest"


def where():
    return os.getcwd()


def database(path):
    import sqlite3
    connection = sqlite3.connect(path)
    try:
        connection.execute("create table t (x)")
        return "created"
    finally:
        connection.close()


def temporary():
    import tempfile
    with tempfile.NamedTemporaryFile("w", delete=False) as handle:
        handle.write("x")
    return os.path.dirname(handle.name) == os.getcwd()


def bail():
    os._exit(3)


def crash():
    import signal
    signal.raise_signal(signal.SIGSEGV)
"""


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def evil(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Verifier, Path]]:
    base = tmp_path_factory.mktemp("evil")
    _write(base / "audited" / "evil" / "__init__.py", "")
    _write(base / "audited" / "evil" / "bad.py", textwrap.dedent(EVIL))
    _write(base / "hidden" / "answer_key.json", '{"secret": true}')
    _write(base / "outside.txt", "private")
    # A generous timeout: the machine may be busy, and these calls are expected to finish.
    verifier = Verifier(base, timeout=3.0, memory_mb=128)
    yield verifier, base
    verifier.close()


@pytest.fixture(scope="module")
def strict(evil: tuple[Verifier, Path]) -> Iterator[Verifier]:
    # CPU limit above the wall timeout: a Python loop meets the timer first, C code the CPU limit
    verifier = Verifier(evil[1], timeout=1.0, memory_mb=128, cpu_seconds=2)
    yield verifier
    verifier.close()


def run(verifier: Verifier, call: str) -> dict[str, Any]:
    return verifier.verify({"file": "evil/bad.py", "failing_call": call, "expected": "?"})


@pytest.mark.parametrize("call", ["spin()", "sleepy()"])
def test_a_call_that_never_ends_times_out(strict: Verifier, call: str) -> None:
    result = run(strict, call)
    assert result["ran"] is True and result["outcome"] == "timeout"
    assert result["actual"] == "timeout: the call did not finish within 1 s"


def test_a_call_stuck_in_c_code_is_stopped_by_the_cpu_limit(strict: Verifier) -> None:
    result = run(strict, "burn()")
    assert result["outcome"] == "timeout"
    assert "CPU" in result["actual"] or "did not finish" in result["actual"]


@pytest.mark.parametrize("call", ["hog(10000000000)", "grow()"])
def test_a_call_that_allocates_a_lot_hits_the_memory_limit(
    evil: tuple[Verifier, Path], call: str
) -> None:
    result = run(evil[0], call)
    assert result["ran"] is True and result["outcome"] == "exception"
    assert result["actual"].startswith("MemoryError"), result["actual"]


@pytest.mark.parametrize("call", ["connect()", "resolve()", "shell()", "spawn()"])
def test_network_and_processes_are_refused(evil: tuple[Verifier, Path], call: str) -> None:
    result = run(evil[0], call)
    assert result["outcome"] == "exception"
    assert "PermissionError: refused by the verification sandbox" in result["actual"]


def test_writes_outside_the_scratch_folder_are_refused(evil: tuple[Verifier, Path]) -> None:
    verifier, base = evil
    target = base / "written.txt"
    result = run(verifier, f"scribble({str(target)!r})")
    assert "PermissionError" in result["actual"] and not target.exists()
    assert run(verifier, "where()")["actual"] == "'<scratch>'"
    copy = verifier._copy
    assert copy is not None
    result = run(verifier, f"database({str(base / 'outside.db')!r})")
    assert "PermissionError" in result["actual"] and not (base / "outside.db").exists()
    for path in (verifier.root / "evil" / "bad.py", copy / "evil" / "bad.py", base / "outside.txt"):
        result = run(verifier, f"remove({str(path)!r})")
        assert "PermissionError" in result["actual"] and path.exists()


def test_the_scratch_folder_is_writable_and_fresh(evil: tuple[Verifier, Path]) -> None:
    assert run(evil[0], "note()")["actual"] == "'kept'"
    assert run(evil[0], "temporary()")["actual"] == "True"  # tempfile writes in scratch
    assert run(evil[0], "database(':memory:')")["actual"] == "'created'"
    assert run(evil[0], "database('here.db')")["actual"] == "'created'"
    assert "FileNotFoundError" in run(evil[0], "peek('note.txt')")["actual"]


def test_results_read_the_same_every_run(algos: Verifier) -> None:
    made = [algos.verify({"failing_call": "MinHeap([3, 1])"})["actual"] for _ in range(2)]
    assert made[0] == made[1] == "<algos.heaps.MinHeap object>"


@pytest.mark.parametrize("target", ["hidden/answer_key.json", "outside.txt"])
def test_reads_of_hidden_or_outside_files_are_refused(
    evil: tuple[Verifier, Path], target: str
) -> None:
    verifier, base = evil
    result = run(verifier, f"peek({str(base / target)!r})")
    assert "PermissionError: refused by the verification sandbox" in result["actual"]
    assert "secret" not in result["actual"] and "private" not in result["actual"]


def test_the_child_sees_none_of_our_environment(
    evil: tuple[Verifier, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_API_KEY", "sk-do-not-leak")
    result = run(evil[0], "environment()")
    assert result["outcome"] == "value"
    assert "LLM_API_KEY" not in result["actual"] and "sk-do-not-leak" not in result["actual"]


def test_a_crash_is_reported_and_a_silent_exit_proves_nothing(evil: tuple[Verifier, Path]) -> None:
    crashed = run(evil[0], "crash()")
    assert crashed["outcome"] == "exception" and "SIGSEGV" in crashed["actual"]
    silent = run(evil[0], "bail()")
    assert silent["ran"] is False and silent["outcome"] is None
    assert "ended without a result (exit code 3)" in (silent["refused"] or "")


def test_a_sandbox_that_cannot_be_set_up_says_so(tmp_path: Path) -> None:
    job = {"lib": str(tmp_path), "scratch": str(tmp_path / "missing"), "module": "m",
           "target": ["f"], "args": [], "kwargs": {}, "nonce": "N0NCE", "timeout": 1.0,
           "memory_bytes": 2**28, "cpu_seconds": 2, "max_repr": 100, "open_files": 64,
           "file_bytes": 2**20}  # fmt: skip
    done = subprocess.run([sys.executable, "-I", "-B", str(CHILD)], input=json.dumps(job),
                          capture_output=True, text=True, timeout=30, check=True)  # fmt: skip
    answer = json.loads(done.stdout.strip().removeprefix("N0NCE"))
    assert answer["outcome"] == "setup" and "could not be set up" in answer["actual"]


def test_what_the_library_prints_cannot_pose_as_the_result(evil: tuple[Verifier, Path]) -> None:
    assert run(evil[0], "forge()")["actual"] == "'honest'"


def test_the_copy_leaves_hidden_out_and_is_removed_on_close(tmp_path: Path) -> None:
    _write(tmp_path / "audited" / "pkg" / "__init__.py", "def f():\n    return 1\n")
    _write(tmp_path / "audited" / "pkg" / "hidden" / "key.py", "SECRET = 1\n")
    verifier = Verifier(tmp_path)
    assert verifier.verify({"failing_call": "f()"})["actual"] == "1"
    copy = verifier._copy
    assert copy is not None and (copy / "pkg" / "__init__.py").exists()
    assert not (copy / "pkg" / "hidden").exists()
    verifier.close()
    assert not copy.exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"timeout": 0}, "timeout"),
        ({"timeout": float("nan")}, "timeout"),
        ({"memory_mb": 4}, "memory"),
    ],  # fmt: skip
)
def test_bad_limits_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Verifier(AUDITED, **options)


@pytest.mark.parametrize("source, said", [
    ("k_smallest([1], 1) + 1", "not an expression of type BinOp"),
    ("(lambda: 0)()", "not an expression of type Lambda"),
    ("k_smallest([1])[0]()", "not an expression of type Subscript"),
    ("k_smallest([1], 1)(2)", "not an expression of type Call"),
])  # fmt: skip
def test_a_refused_call_names_the_kind_of_expression_without_a_wrong_article(
    source: str, said: str
) -> None:
    # "not a Attribute expression": an article chosen without the word (kit cannot import
    # planlang.errors.a_kind), now said without one
    with pytest.raises(CallRefused) as refused:
        parse_call(source)
    assert said in str(refused.value)
