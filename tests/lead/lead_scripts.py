"""Scripted leads and workers for the lead's tests: clients that return ``runtime.Reply``."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from runtime import Reply

FINDINGS = (
    '{"type": "object", "required": ["findings"], "properties": {"findings": {"type": '
    '"array", "items": {"type": "object", "required": ["file", "line"], "properties": '
    '{"file": {"type": "string"}, "line": {"type": "integer", "minimum": 1}}}}}}'
)

SCAN_ALL = f"""
FINDINGS = {FINDINGS}
phase("scan")
parts = inputs["parts"]
found = parallel([lambda p=p: agent("Scan part " + p, schema=FINDINGS, model="scan")
                  for p in parts])
"""

# Trusts every worker: crashes on the first one that failed (its answer is None).
GOOD_PLAN = (
    SCAN_ALL
    + """
phase("merge")
bugs = []
for answer in found:
    bugs.extend(answer["findings"])
result = sorted(bugs, key=lambda f: (f["file"], f["line"]))
"""
)

# Asks the failed parts again as a second sample and skips what is still missing.
REVISED_PLAN = (
    SCAN_ALL
    + """
phase("retry")
missing = [parts[i] for i in range(len(parts)) if found[i] is None]
again = parallel([lambda p=p: agent("Scan part " + p, schema=FINDINGS, model="scan", sample=1)
                  for p in missing])
phase("merge")
bugs = [f for answer in found + again if answer for f in answer["findings"]]
result = sorted(bugs, key=lambda f: (f["file"], f["line"]))
"""
)

REFUSED_PLAN = "import os\n" + GOOD_PLAN


def fenced(source: str) -> str:
    return f"Here is the plan.\n\n```python\n{source}```\nIt scans every part."


class ScriptedLead:
    """A lead that answers its n-th call with ``replies[n]`` and remembers what it was told."""

    def __init__(self, replies: list[str]):
        self.replies = replies
        self.seen: list[list[dict[str, Any]]] = []

    def __call__(self, model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        self.seen.append([dict(m) for m in messages])
        text = self.replies[min(len(self.seen), len(self.replies)) - 1]
        return Reply(text=text, model=model)


class ScriptedWorker:
    """Answers "Scan part X" with one finding in X.py; ``broken`` parts answer nonsense
    the first ``broken[X]`` times they are asked. Counts calls per question."""

    def __init__(self, broken: dict[str, int] | None = None):
        self.broken = broken or {}
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        question = next(m["content"] for m in messages if m["role"] == "user")
        part = question.rsplit(" ", 1)[-1]
        with self._lock:
            self.calls[question] += 1
            count = self.calls[question]
        if count <= self.broken.get(part, 0):
            return Reply(text="I could not read this part.", model=model)
        answer = {"findings": [{"file": f"{part}.py", "line": 3}]}
        return Reply(text=json.dumps(answer), data=answer, model=model)


Client = Callable[..., Reply]
