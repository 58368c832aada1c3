"""Scripted workers for the kit's tests: an oracle scanner and a skeptic, as model clients.

The scanner reports every planted bug of the default corpus whose file is in the shard it is
shown (read from the answer key by the TEST, never by the kit), plus a false alarm per shard;
the skeptic calls a report real when it is a planted place, or, when it is shown a
verification result, when the run disagrees with the expected value.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

from runtime import LLM, Budget, Reply, Role, Run, Settings

REPO = Path(__file__).resolve().parents[2]
ALGOS = REPO / "data" / "algos"
AUDITED = ALGOS / "audited"
KEY = json.loads((ALGOS / "hidden" / "answer_key.json").read_text(encoding="utf-8"))
PLANTED = {f"{bug['path']}::{bug['function']}": bug for bug in KEY["bugs"]}

SETTINGS = Settings(
    roles={"scan": Role(model="small", price=0.05), "skeptic": Role(model="small", price=0.01)},
    max_agents=200,
    concurrency=4,
)

FILE_HEADER = re.compile(r"^=== FILE: (.+) ===$", re.MULTILINE)
# Calls that return the right value on the default corpus: reported as bugs, they are false.
FALSE_ALARMS = {
    "algos/number_theory.py": ("gcd", "gcd(12, 18)", "6"),
    "algos/matrices.py": ("transpose", "transpose([[1, 2], [3, 4]])", "[[1, 3], [2, 4]]"),
    "algos/dynamic.py": ("fibonacci", "fibonacci(10)", "55"),
}


def planted_finding(bug: dict[str, Any]) -> dict[str, Any]:
    failing = bug["failing"][0]
    return {
        "file": bug["path"],
        "line": bug["line"],
        "function": bug["function"],
        "claim": f"{bug['kind']} in {bug['function']}",
        "failing_call": failing["source"].strip(),
        "expected": failing["want"].strip(),
        "confidence": 0.9,
    }


def false_alarm(path: str, text: str) -> dict[str, Any] | None:
    if path not in FALSE_ALARMS:
        return None
    function, call, expected = FALSE_ALARMS[path]
    line = next(
        int(n) for n, code in re.findall(r"^(\d+): (.*)$", text, re.MULTILINE)
        if code.startswith(f"def {function}(")
    )  # fmt: skip
    return {"file": path, "line": line + 2, "function": function, "claim": "looks wrong",
            "failing_call": call, "expected": expected, "confidence": 0.4}  # fmt: skip


class Auditor:
    """A model client: ``(model, messages, **params) -> Reply``, recording what it was sent."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def __call__(self, model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        user = next(m["content"] for m in messages if m["role"] == "user")
        with self.lock:
            self.calls.append({"model": model, "system": system, "user": user, **params})
        if "ROLE: scan" in system:
            answer = self.scan(user)
        elif "ROLE: skeptic" in system:
            answer = self.judge(user)
        else:
            raise AssertionError(f"a call with no kit role marker: {system[:80]!r}")
        return Reply(text=json.dumps(answer), data=answer, model=model)

    def scan(self, user: str) -> dict[str, Any]:
        files = FILE_HEADER.findall(user)
        findings = [planted_finding(bug) for bug in KEY["bugs"] if bug["path"] in files]
        for path in files:
            alarm = false_alarm(path, user.split(f"=== FILE: {path} ===", 1)[1])
            if alarm is not None:
                findings.append(alarm)
        return {"findings": findings}

    def judge(self, user: str) -> dict[str, Any]:
        body = user.split("FINDINGS:\n", 1)[1]
        reports, _, rest = body.partition("\nVERIFICATION:\n")
        evidence = {e["key"]: e for e in json.loads(rest)} if rest else {}
        verdicts = []
        for report in json.loads(reports):
            key = report["key"]
            shown = evidence.get(key)
            if shown is not None and shown["ran"]:
                real = shown["actual"] != shown["expected"]
                reason = f"ran: got {shown['actual']}, expected {shown['expected']}"
            else:
                real, reason = key in PLANTED, "read the code"
            verdicts.append({"key": key, "real": real, "reason": reason})
        return {"verdicts": verdicts}


def scripted_run(client: Any, title: str = "scripted audit") -> Run:
    llm = LLM(None, client=client, budget=Budget(None), settings=SETTINGS)
    return Run(title, llm=llm, settings=SETTINGS)
