"""The audit kit's words on the default corpus, with scripted workers, and the example plan."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kit_scripted import (
    ALGOS,
    AUDITED,
    FALSE_ALARMS,
    KEY,
    PLANTED,
    REPO,
    SETTINGS,
    Auditor,
    planted_finding,
    scripted_run,
)

from kit.audit_words import audit_words, render_file
from kit.findings import (
    MODULE_LEVEL,
    batches,
    dedupe,
    flatten,
    key_of,
    normalise_finding,
    report,
    vote,
)
from kit.paths import PathRefused
from kit.prompts import LENSES, load_prompts
from kit.source import function_spans
from planlang.gate import Gate, Policy
from planlang.price import price
from planlang.project import load_project
from runtime import Reply

PLAN = (REPO / "examples" / "audit_plan.py").read_text(encoding="utf-8")
HEAPS = "algos/heaps.py"


def words_for(client: Any, corpus: Path = AUDITED, **options: Any) -> dict[str, Any]:
    return audit_words(scripted_run(client), corpus=str(corpus), **options)


def spans_of(path: str) -> list[Any]:
    return function_spans((AUDITED / path).read_text(encoding="utf-8"))


def line_of(path: str, text: str) -> int:
    lines = (AUDITED / path).read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, start=1) if text in line)


# -- reading the corpus ------------------------------------------------------------------------


def test_files_lists_every_python_file_and_nothing_hidden() -> None:
    words = words_for(Auditor())
    listed = words["files"]()
    expected = sorted(p.relative_to(AUDITED).as_posix() for p in AUDITED.rglob("*.py"))
    assert [f["path"] for f in listed] == expected
    heaps = next(f for f in listed if f["path"] == HEAPS)
    assert heaps["lines"] == len((AUDITED / HEAPS).read_text().splitlines())
    assert heaps["tokens"] > heaps["lines"]


def test_a_benchmark_folder_means_its_audited_copy_never_the_originals() -> None:
    words = words_for(Auditor(), corpus=ALGOS)
    assert {f["path"] for f in words["files"]()} == {
        p.relative_to(AUDITED).as_posix() for p in AUDITED.rglob("*.py")
    }
    assert not any(f["path"].startswith(("source/", "hidden/")) for f in words["files"]())


def test_a_corpus_under_hidden_is_refused() -> None:
    with pytest.raises(PathRefused, match="hidden"):
        words_for(Auditor(), corpus=ALGOS / "hidden")


@pytest.mark.parametrize("target", [None, 3000, 1000])
def test_shards_cover_every_file_exactly_once(target: int | None) -> None:
    words = words_for(Auditor())
    shards = words["shards"]() if target is None else words["shards"](target)
    paths = [p for s in shards for p in s["paths"]]
    assert sorted(paths) == [f["path"] for f in words["files"]()]
    assert len({s["id"] for s in shards}) == len(shards)
    assert all(s["tokens"] > 0 for s in shards)
    if target is None:
        assert len(shards) == 1  # the default corpus fits one 20,000-token shard


def test_smaller_shards_mean_more_of_them() -> None:
    words = words_for(Auditor())
    assert len(words["shards"](1000)) > len(words["shards"](3000)) > len(words["shards"]())
    with pytest.raises(ValueError, match="positive"):
        words["shards"](0)


def test_numbered_shows_the_contract_format() -> None:
    text = words_for(Auditor())["numbered"]("./" + HEAPS)
    lines = text.splitlines()
    source = (AUDITED / HEAPS).read_text().splitlines()
    assert lines[0] == f"=== FILE: {HEAPS} ==="
    assert lines[1:] == [f"{n}: {line}" for n, line in enumerate(source, start=1)]


@pytest.mark.parametrize(
    "path",
    [
        "../hidden/answer_key.json",
        "hidden/answer_key.json",
        str(ALGOS / "hidden" / "answer_key.json"),
        "../source/algos/heaps.py",
        "/etc/passwd",
        "algos/nothing.py",
    ],
)
def test_numbered_refuses_hidden_escapes_and_strangers(path: str) -> None:
    with pytest.raises(PathRefused):
        words_for(Auditor())["numbered"](path)


# -- scan --------------------------------------------------------------------------------------


class Fixed:
    """A client answering every scan with the findings of the current turn."""

    def __init__(self, *turns: list[dict[str, Any]]) -> None:
        self.turns = turns
        self.sent: list[list[dict[str, Any]]] = []

    def __call__(self, model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        self.sent.append(messages)
        turn = sum(1 for m in messages if m["role"] == "assistant")
        answer = {"findings": self.turns[min(turn, len(self.turns) - 1)]}
        return Reply(text=json.dumps(answer), model=model)


def finding(**fields: Any) -> dict[str, Any]:
    base = {"file": HEAPS, "line": 1, "function": "", "claim": "c", "failing_call": "f()",
            "expected": "1", "confidence": 0.5}  # fmt: skip
    return {**base, **fields}


def test_scan_sends_the_shard_in_the_contract_format_with_the_lens() -> None:
    client = Fixed([])
    words = words_for(client)
    shard = words["shards"]()[0]
    assert words["scan"](shard, "boundaries") == []
    system, user = client.sent[0][0]["content"], client.sent[0][1]["content"]
    assert "ROLE: scan" in system and "boundaries" in system
    assert load_prompts().lenses["boundaries"] in system
    for path in shard["paths"]:
        assert render_file(path, (AUDITED / path).read_text()) in user
    with pytest.raises(ValueError, match="lens"):
        words["scan"](shard, "vibes")


def test_scan_normalises_each_finding_to_its_enclosing_function() -> None:
    inside = line_of(HEAPS, "count = len(heap)")
    blank = line_of(HEAPS, "def k_smallest") - 1  # the blank line before k_smallest
    assert not any(s.contains(blank) for s in spans_of(HEAPS))
    client = Fixed(
        [
            finding(line=inside, function="wrong_name", confidence=0.9),
            finding(line=blank, function="heaps.k_smallest"),
            finding(line=blank, function="no_such_function"),
        ]
    )
    words = words_for(client)
    found = words["scan"]({"id": "s9", "paths": [HEAPS]}, "logic")
    assert [(f["function"], f["line"]) for f in found] == [
        ("k_smallest", inside),
        ("k_smallest", blank),
        (MODULE_LEVEL, blank),
    ]
    assert all(set(f) == {"file", "line", "function", "claim", "failing_call", "expected",
                          "confidence"} for f in found)  # fmt: skip


def test_findings_outside_the_shard_never_come_through() -> None:
    # The answer schema names the shard's files: an answer about another file is repaired
    # (turn two) or the worker fails, and scan() returns [].
    stranger = finding(file="algos/graphs.py", line=10)
    repaired = Fixed([stranger], [finding(line=line_of(HEAPS, "count = len(heap)"))])
    words = words_for(repaired)
    found = words["scan"]({"id": "s1", "paths": [HEAPS]})
    assert [(f["file"], f["function"]) for f in found] == [(HEAPS, "k_smallest")]
    stubborn = Fixed([stranger])
    run = scripted_run(stubborn)
    words = audit_words(run, corpus=str(AUDITED))
    assert words["scan"]({"id": "s1", "paths": [HEAPS]}) == []
    assert [t.status for t in run.threads] == ["failed"]


def test_scan_refuses_a_shard_naming_hidden_files() -> None:
    words = words_for(Fixed([]))
    with pytest.raises(PathRefused):
        words["scan"]({"id": "x", "paths": ["../hidden/answer_key.json"]})


@pytest.mark.parametrize(
    ("file", "expected"),
    [
        (HEAPS, HEAPS),
        ("./algos/heaps.py", HEAPS),
        ("/algos/heaps.py", HEAPS),
        ("data/algos/audited/algos/heaps.py", HEAPS),
        ("heaps.py", HEAPS),
        ("algos/graphs.py", None),
        ("../hidden/answer_key.json", None),
        ("", None),
        (None, None),
    ],
)
def test_normalise_accepts_spellings_of_shard_files_only(file: Any, expected: str | None) -> None:
    raw = finding(file=file, line=line_of(HEAPS, "count = len(heap)"))
    result = normalise_finding(raw, [HEAPS, "algos/sorting.py"], spans_of)
    assert (result["file"] if result else None) == expected


def test_normalise_repairs_odd_values() -> None:
    raw = {"file": HEAPS, "line": "67", "confidence": 7, "claim": None, "expected": [1, 3]}
    result = normalise_finding(raw, [HEAPS], spans_of)
    assert result is not None
    assert result["line"] == 67 and result["confidence"] == 1.0
    assert result["claim"] == "" and result["expected"] == "[1, 3]"
    assert normalise_finding("not a finding", [HEAPS], spans_of) is None


# -- dedupe, key_of, batches, flatten, vote, report ---------------------------------------------


def test_dedupe_keeps_one_place_per_function_counting_reports() -> None:
    a = finding(function="k_smallest", line=66, confidence=0.3, claim="weak")
    b = finding(function="k_smallest", line=67, confidence=0.8, claim="strong", file="./" + HEAPS)
    c = finding(function="heap_sort", line=59)
    out = dedupe([a, c, b, None])
    assert [(key_of(x), x["reports"], x["claim"]) for x in out] == [
        (f"{HEAPS}::k_smallest", 2, "strong"),
        (f"{HEAPS}::heap_sort", 1, "c"),
    ]
    again = dedupe([*out, a])  # a second round adds its counts
    assert again[0]["reports"] == 3


findings_strategy = st.lists(
    st.builds(
        finding,
        file=st.sampled_from([HEAPS, "algos/sorting.py", "./algos/sorting.py"]),
        function=st.sampled_from(["f", "g", "A.h", ""]),
        confidence=st.floats(0, 1),
    ),
    max_size=30,
)


@settings(max_examples=100)
@given(findings_strategy)
def test_dedupe_counts_every_report_once_at_a_unique_key(items: list[dict[str, Any]]) -> None:
    out = dedupe(items)
    keys = [key_of(c) for c in out]
    assert len(keys) == len(set(keys)) == len({key_of(f) for f in items})
    assert sum(c["reports"] for c in out) == len(items)
    backwards = dedupe(items[::-1])
    assert {(key_of(c), c["reports"]) for c in backwards} == {
        (key_of(c), c["reports"]) for c in out
    }


def test_batches_and_flatten() -> None:
    assert batches([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]
    assert batches([], 3) == []
    with pytest.raises(ValueError, match="size"):
        batches([1], 0)
    assert flatten([[1, 2], None, [], [3]]) == [1, 2, 3]


def test_vote_keeps_places_enough_skeptics_called_real() -> None:
    one = finding(function="k_smallest")
    two = finding(function="heap_sort")
    k1, k2 = key_of(one), key_of(two)
    verdicts = [
        [{"key": k1, "real": True, "reason": ""}, {"key": k2, "real": True, "reason": ""}],
        [{"key": k1, "real": True, "reason": ""}, {"key": k1, "real": True, "reason": "dup"}],
        None,
        [{"key": k2, "real": False, "reason": ""}, {"key": k1, "real": "yes", "reason": ""}],
    ]
    assert vote([one, two], verdicts, need=2) == [one]
    assert vote([one, two], verdicts, need=1) == [one, two]
    assert vote([one, two], verdicts, need=3) == []
    with pytest.raises(ValueError, match="need"):
        vote([one], verdicts, need=0)


def test_report_is_one_sorted_line_per_place() -> None:
    items = [finding(function="k_smallest", line=67, claim="x"),
             finding(function="k_smallest", line=60, claim="y"),
             finding(file="algos/arrays.py", function="rotate", line=50)]  # fmt: skip
    assert report(items) == [
        {"file": "algos/arrays.py", "line": 50, "function": "rotate", "claim": "c"},
        {"file": HEAPS, "line": 67, "function": "k_smallest", "claim": "x"},
    ]


# -- check -------------------------------------------------------------------------------------


def test_check_tells_skeptics_most_reports_are_false_and_shows_the_code() -> None:
    client = Auditor()
    words = words_for(client)
    planted = [planted_finding(bug) for bug in KEY["bugs"][:2]]
    alarm = finding(file="algos/number_theory.py", function="gcd", line=6)
    verdicts = words["check"]([*planted, alarm, planted[0]])
    assert [v["key"] for v in verdicts] == [key_of(f) for f in [*planted, alarm]]
    assert [v["real"] for v in verdicts] == [True, True, False]
    system, user = client.calls[0]["system"], client.calls[0]["user"]
    assert "ROLE: skeptic" in system and "Most reports you will see are false alarms" in system
    assert "only when you are sure" in system
    shown = json.loads(user.split("FINDINGS:\n", 1)[1])
    assert [s["key"] for s in shown] == [v["key"] for v in verdicts]
    bug = KEY["bugs"][0]
    assert f"{bug['line']}: {bug['planted']}" in shown[0]["code"]
    assert "VERIFICATION:" not in user


def test_check_shows_verification_results_when_given() -> None:
    client = Auditor()
    words = words_for(client)
    alarm = finding(file="algos/number_theory.py", function="gcd", failing_call="gcd(12, 18)",
                    expected="6")  # fmt: skip
    evidence = [{"ran": True, "refused": None, "outcome": "value", "actual": "6", "expected": "6"}]
    assert words["check"]([alarm], evidence=evidence)[0]["real"] is False
    shown = json.loads(client.calls[0]["user"].split("VERIFICATION:\n", 1)[1])
    assert shown == [{"key": key_of(alarm), "failing_call": "gcd(12, 18)", **evidence[0]}]
    with pytest.raises(ValueError, match="evidence"):
        words["check"]([alarm], evidence=[])


def test_a_skeptic_that_fails_or_skips_a_key_says_not_real() -> None:
    def skips(model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        return Reply(text='{"verdicts": []}')

    words = words_for(skips)
    verdicts = words["check"]([finding(function="k_smallest")])
    assert verdicts == [{"key": f"{HEAPS}::k_smallest", "real": False,
                         "reason": "no verdict: the skeptic failed"}]  # fmt: skip
    assert words["check"]([]) == []


# -- the kit never opens hidden/ ---------------------------------------------------------------

OPENED: list[str] = []
RECORDING = False
HOOKED = False
WATCHED = {"open", "os.listdir", "os.scandir", "pathlib.Path.glob", "pathlib.Path.rglob",
           "shutil.copytree", "os.chdir"}  # fmt: skip


def _record(event: str, args: tuple[Any, ...]) -> None:
    if RECORDING and event in WATCHED and args and isinstance(args[0], str | Path):
        OPENED.append(str(args[0]))


def test_the_words_never_open_a_path_under_hidden() -> None:
    global RECORDING, HOOKED
    if not HOOKED:  # an audit hook stays for the life of the process: add it once, here
        sys.addaudithook(_record)
        HOOKED = True
    OPENED.clear()
    RECORDING = True
    try:
        for corpus in (AUDITED, ALGOS):
            words = words_for(Auditor(), corpus=corpus)
            words["files"]()
            shard = words["shards"](2000)[0]
            found = words["scan"](shard)
            words["check"](found)
            words["verify"](found[0] if found else finding(failing_call="gcd(1, 2)"))
            for path in ("../hidden/answer_key.json", str(ALGOS / "hidden" / "plant_report.json")):
                with pytest.raises(PathRefused):
                    words["numbered"](path)
        _audit_end_to_end(verify_calls=True)
    finally:
        RECORDING = False
    assert OPENED, "the recorder saw no file opened at all"
    assert any("audited" in path for path in OPENED)
    assert [p for p in OPENED if "hidden" in Path(p).parts] == []


# -- the example plan --------------------------------------------------------------------------


def provider(run: Any) -> dict[str, Any]:
    return audit_words(run, corpus=str(AUDITED), verify_timeout=5.0)


@pytest.mark.parametrize("inputs", [{}, {"verify": True}])
def test_the_example_plan_prices_clean(inputs: dict[str, Any]) -> None:
    priced = price(PLAN, host=provider, settings=SETTINGS, seeds=3, inputs=inputs,
                                  filename="examples/audit_plan.py")  # fmt: skip
    assert priced.problems == []
    assert set(priced.roles) == {"scan", "skeptic"}
    assert priced.phases["scan"]["calls"].median == len(LENSES)  # one shard, every lens
    assert priced.phases["skeptics"]["calls"].min >= 3  # three samples per batch


def _audit_end_to_end(verify_calls: bool) -> tuple[Any, Auditor]:
    client = Auditor()
    gate = Gate(Policy(max_ceiling=100, max_median=5), settings=SETTINGS, host=provider,
                inputs={"verify": verify_calls}, seeds=2)  # fmt: skip
    try:
        decision = gate.submit(PLAN, filename="examples/audit_plan.py")
        assert decision.approved, decision.reasons
        result = scripted_run(client).run_sync(decision.plan)
    finally:
        gate.close()
    return result, client


@pytest.mark.parametrize("verify_calls", [False, True])
def test_the_example_plan_runs_and_reports_the_planted_bugs(verify_calls: bool) -> None:
    result, client = _audit_end_to_end(verify_calls)
    assert {f"{r['file']}::{r['function']}" for r in result} == set(PLANTED)
    assert not any(r["function"] in {v[0] for v in FALSE_ALARMS.values()} for r in result)
    assert set(result[0]) == {"file", "line", "function", "claim"}
    assert result == sorted(result, key=lambda r: (r["file"], r["line"], r["function"]))
    scans = [c for c in client.calls if "ROLE: scan" in c["system"]]
    skeptics = [c for c in client.calls if "ROLE: skeptic" in c["system"]]
    assert len(scans) == len(LENSES)
    assert len(skeptics) % 3 == 0 and skeptics
    assert all(("VERIFICATION:" in c["user"]) == verify_calls for c in skeptics)
    if verify_calls:
        shown = {
            e["key"]: e
            for c in skeptics
            for e in json.loads(c["user"].split("VERIFICATION:\n", 1)[1])
        }
        alarms = [k for k in shown if k not in PLANTED]
        assert alarms and all(shown[k]["actual"] == shown[k]["expected"] for k in alarms)
        ran = [k for k in PLANTED if shown[k]["ran"]]
        assert len(ran) >= len(PLANTED) - 1  # a method's bug may need an instance: refused
        assert all(shown[k]["actual"] != shown[k]["expected"] for k in ran)


def test_false_alarms_of_the_script_are_not_planted_bugs() -> None:
    planted = {(bug["path"], bug["function"]) for bug in KEY["bugs"]}
    assert not planted & {(path, v[0]) for path, v in FALSE_ALARMS.items()}


def test_the_project_configuration_approves_the_example_plan() -> None:
    project = load_project(REPO / "planlang.toml")
    assert project.host_specs == ["kit.audit_words:audit_words"]
    assert {"scan", "skeptic", "lead"} <= set(project.settings.roles)
    gate = Gate(project.policy, settings=project.settings, host=project.host_provider(),
                inputs=project.inputs, seeds=2)  # fmt: skip
    try:
        decision = gate.submit(PLAN, filename="examples/audit_plan.py")
    finally:
        gate.close()
    assert decision.approved, decision.reasons
    assert decision.price.problems == []
