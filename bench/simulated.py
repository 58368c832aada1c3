"""A simulated model for offline evaluations: it knows the answer key and errs at fitted rates.

Real models are slow and cost money, and the evaluation must run in CI; so ``python -m bench
eval --model simulated`` answers every call with this client. It recognises the kit's calls by
the markers of the kit's contract (docs/KIT.md) and is deterministic: each answer is seeded by
the question itself and by its sample number, which ``SampleTellingLLM`` hands it (the runtime's
client interface carries only model, messages and params). Seeding by the order of asking instead
would let thread timing decide which of two parallel samples of one question gets which answer.
Called directly, without a sample, the client falls back to counting how often the same question
was asked.

Its numbers are in ``bench.calibration``, fitted to the reference study where it measured
something and assumed (and said so) where it did not:

- scan ("ROLE: scan"): a planted bug in the shard's files ("=== FILE: <path> ===") is *visible*
  in a read of ``t`` tokens when the bug's latent draw (one per bug and seed) is under
  ``visibility(t)``; a visible bug is reported with probability ``READ_HIT`` by each read. A
  read longer than the model's context (``context_tokens``) is one agent alone over a library
  far beyond it: it starts at a file of its choosing, reads on for about ``SOLO_READ_TOKENS``
  (uniform between none and twice that), forgetting as it goes, so what it reports is seen at
  the visibility of one context; then it stops. A found bug is reported at its line and
  function, with the failing call and expected value from the key. Each read also makes false
  alarms: ``FALSE_ALARM_TRIES`` tries at ``FALSE_ALARM_RATE``, each at a function without a bug.
- skeptic ("ROLE: skeptic"): a real bug is called real with the fitted ``skeptic_real``, a false
  alarm false with ``SKEPTIC_FALSE``; with a "VERIFICATION:" section, ``VERIFIED``.
- review ("ROLE: review", the orchestrating lead of design 3): one skeptic without verification.
- lead ("ROLE: lead"): writes an audit plan from the fact sheet (see ``plan_from_sheet``).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import threading
from collections import Counter
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from bench.calibration import (
    CONTEXT_TOKENS,
    FALSE_ALARM_RATE,
    FALSE_ALARM_TRIES,
    FITTED,
    READ_HIT,
    SKEPTIC_FALSE,
    VERIFIED,
    visibility,
)
from kit.library import PARSE_LOCK
from kit.shards import CHARS_PER_TOKEN
from kit.source import function_spans
from runtime import LLM, Reply

__all__ = ["SampleTellingLLM", "SimulatedModel", "lead_plan", "SIMULATED"]

SIMULATED = "simulated"
SKEPTIC_ACCURACY = {  # (P(real | real bug), P(false | false alarm)), without / with verification
    False: (FITTED.skeptic_real, SKEPTIC_FALSE),
    True: VERIFIED,
}
_FILE = re.compile(r"^=== (?:FILE: )?(.+?)(?: \(\d+ lines\))? ===$", re.MULTILINE)
_KEY = re.compile(r'"key":\s*"([^"]+)"')
# The sample number of the question being asked on this thread (None: not told).
_SAMPLE: ContextVar[int | None] = ContextVar("simulated_sample", default=None)


class SampleTellingLLM(LLM):
    """An ``LLM`` that tells a simulated client which sample each question is.

    The client is called on the thread that called ``chat`` (``runtime.llm``: budget, client,
    ledger in turn), so a context variable set around the call reaches it. A real client
    ignores it. ``offset`` is added to every sample number (one repeat of an evaluation asks
    its own samples, so a ledger does not answer them with another repeat's).
    """

    def __init__(self, *args: Any, offset: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.offset = offset

    def chat(self, messages: list[dict[str, Any]], *, sample: int = 0, **kwargs: Any) -> Reply:
        sample += self.offset
        told = _SAMPLE.set(sample)
        try:
            return super().chat(messages, sample=sample, **kwargs)
        finally:
            _SAMPLE.reset(told)


class SimulatedModel:
    """A client ``(model, messages, **params) -> Reply`` for the kit's scan and skeptic calls,
    design 3's review calls and the lead."""

    def __init__(
        self,
        corpus: str | Path,
        key: Mapping[str, Any],
        seed: int = 0,
        context_tokens: int = CONTEXT_TOKENS,
    ) -> None:
        self.root = Path(corpus)
        self.context_tokens = context_tokens
        self.bugs = list(key["bugs"])
        self.bug_keys = {f"{b['path']}::{b['function']}" for b in self.bugs}
        self.seed = seed
        self.calls: Counter[str] = Counter()  # per role
        self._asked: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._spans: dict[str, list[tuple[str, int, str]]] = {}

    def __repr__(self) -> str:
        return f"SimulatedModel({str(self.root)!r}, bugs={len(self.bugs)}, seed={self.seed})"

    def __call__(self, model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        system = "\n".join(str(m["content"]) for m in messages if m["role"] == "system")
        user = "\n".join(str(m["content"]) for m in messages if m["role"] == "user")
        rng = self._rng(model, messages)
        if "ROLE: scan" in system:
            role, data = "scan", self._scan(system, user, rng)
        elif "ROLE: skeptic" in system:
            role, data = "skeptic", self._judge(user, rng)
        elif "ROLE: review" in system:
            role, data = "review", self._review(user, rng)
        elif "ROLE: lead" in system:
            with self._lock:
                self.calls["lead"] += 1
            text = "```python\n" + plan_from_sheet(user) + "```\n"
            return Reply(text=text, model=model, prompt_tokens=len(system + user) // 4,
                         completion_tokens=len(text) // 4)  # fmt: skip
        else:
            role, data = "unknown", None
        with self._lock:
            self.calls[role] += 1
        text = json.dumps(data) if data is not None else "I do not know this task."
        return Reply(text=text, data=data, model=model, prompt_tokens=len(system + user) // 4,
                     completion_tokens=len(text) // 4)  # fmt: skip

    def _rng(self, model: str, messages: list[dict[str, Any]]) -> random.Random:
        """The answer's generator: seeded by the question and its sample number when the LLM
        told it (sample k draws what the (k+1)-th ask drew before samples were told), else by
        how many times the same question was asked."""
        asked = json.dumps([model, messages], sort_keys=True)
        sample = _SAMPLE.get()
        with self._lock:
            self._asked[f"{sample}:{asked}"] += 1
            nth = self._asked[f"{sample}:{asked}"]
        if sample is None:
            token = str(nth)
        else:  # a ledger answers a repeat of (question, sample); without one, vary it
            token = str(sample + 1) if nth == 1 else f"{sample + 1}.{nth}"
        digest = hashlib.sha256(f"{self.seed}:{token}:{asked}".encode()).hexdigest()
        return random.Random(digest)

    # -- scan ----------------------------------------------------------------------------

    def _scan(self, system: str, user: str, rng: random.Random) -> dict[str, Any]:
        sizes = _file_tokens(user)
        tokens = len(user) / CHARS_PER_TOKEN
        if tokens > self.context_tokens:  # one agent alone: reads on from somewhere, stops
            files, tokens = self._solo_reading(sizes, rng), self.context_tokens
        else:
            files = [path for path, _ in sizes]
        seen = visibility(tokens)
        findings = []
        for bug in self.bugs:
            if bug["path"] in files and self._latent(bug) < seen and rng.random() < READ_HIT:
                failing = bug["failing"][0] if bug.get("failing") else {}
                findings.append({
                    "file": bug["path"], "line": int(bug["line"]), "function": bug["function"],
                    "claim": f"The {bug['kind'].replace('_', ' ')} here gives wrong results.",
                    "failing_call": str(failing.get("source", "")).strip(),
                    "expected": str(failing.get("want", "")).strip(),
                    "confidence": round(0.5 + 0.4 * rng.random(), 2),
                })  # fmt: skip
        for _ in range(FALSE_ALARM_TRIES):
            if files and rng.random() < FALSE_ALARM_RATE:
                alarm = self._false_alarm(rng.choice(files), rng)
                if alarm is not None:
                    findings.append(alarm)
        return {"findings": findings}

    def _latent(self, bug: Mapping[str, Any]) -> float:
        """The bug's draw in [0, 1) for this seed: visible in every read whose visibility is
        above it (so reads of one run agree on which bugs are easy)."""
        digest = hashlib.sha256(f"{self.seed}:visible:{bug['id']}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64

    def _solo_reading(self, sizes: list[tuple[str, float]], rng: random.Random) -> list[str]:
        """The files one agent reads before it stops: on from a file it picks, in order."""
        budget = rng.uniform(0.0, 2.0 * FITTED.solo_read_tokens)
        start, files = rng.randrange(len(sizes)), []
        for step in range(len(sizes)):
            path, size = sizes[(start + step) % len(sizes)]
            if budget <= 0:
                break
            files.append(path)
            budget -= size
        return files

    def _false_alarm(self, path: str, rng: random.Random) -> dict[str, Any] | None:
        spans = [s for s in self._functions(path) if f"{path}::{s[0]}" not in self.bug_keys]
        if not spans:
            return None
        name, start, example = rng.choice(spans)
        return {
            "file": path, "line": start + 1, "function": name,
            "claim": "This looks wrong for some inputs.",
            "failing_call": example, "expected": "a different result",
            "confidence": round(0.3 + 0.5 * rng.random(), 2),
        }  # fmt: skip

    def _functions(self, path: str) -> list[tuple[str, int, str]]:
        """(name, first line, a doctest call of it or "") for each function of ``path``."""
        with self._lock:
            known = self._spans.get(path)
        if known is not None:
            return known
        try:
            source = (self.root / path).read_text(encoding="utf-8")
            # CPython 3.11's ast.parse is not safe on parallel threads (gh-106905: SystemError
            # "AST constructor recursion depth mismatch"); the kit's workers parse under this
            # same lock, so a lock of our own would not keep us from colliding with them.
            with PARSE_LOCK:
                spans = function_spans(source)
        except (OSError, SyntaxError, ValueError):
            spans = []
        lines = source.splitlines() if spans else []
        found = []
        for span in spans:
            body = lines[span.start - 1 : span.end]
            calls = [line.strip()[4:] for line in body if line.strip().startswith(">>> ")]
            found.append((span.name, span.start, calls[0] if calls else ""))
        with self._lock:
            self._spans[path] = found
        return found

    # -- skeptic and review --------------------------------------------------------------

    def _says_real(self, key: str, verified: bool, rng: random.Random) -> bool:
        real_if_real, false_if_false = SKEPTIC_ACCURACY[verified]
        if key in self.bug_keys:
            return rng.random() < real_if_real
        return rng.random() >= false_if_false

    def _judge(self, user: str, rng: random.Random) -> dict[str, Any]:
        verified = "VERIFICATION:" in user
        keys = list(dict.fromkeys(_KEY.findall(user.split("VERIFICATION:")[0])))
        verdicts = []
        for key in keys:
            real = self._says_real(key, verified, rng)
            reason = "The code does what the report says." if real else "The code is right."
            verdicts.append({"key": key, "real": real, "reason": reason})
        return {"verdicts": verdicts}

    def _review(self, user: str, rng: random.Random) -> dict[str, Any]:
        pairs = re.findall(r'"file":\s*"([^"]+)".*?"function":\s*"([^"]+)"', user)
        keys = list(dict.fromkeys(f"{file}::{function}" for file, function in pairs))
        return {"keep": [k for k in keys if self._says_real(k, False, rng)]}


# -- the simulated lead --------------------------------------------------------------------


def lead_plan(shard_tokens: int, lenses: list[str], skeptics: int, batch: int = 8) -> str:
    """The plan the simulated lead writes: scan every shard through the chosen lenses, let
    ``skeptics`` skeptics judge every candidate, keep what two of them call real."""
    need = min(2, skeptics)
    check_part = (
        f"""phase("check")
groups = batches(candidates, {batch})
asks = [[k, g] for k in range({skeptics}) for g in groups]
judged = parallel([lambda a=a: check(a[1], a[0]) for a in asks])
verdicts = [flatten(judged[k * len(groups):(k + 1) * len(groups)]) for k in range({skeptics})]
kept = vote(candidates, verdicts, need={need})
"""
        if skeptics
        else "kept = candidates\n"
    )
    return f"""# Plan by the simulated lead: {len(lenses)} lenses at {shard_tokens:,}-token shards.
phase("scan")
parts = shards({shard_tokens})
jobs = [[s, lens] for s in parts for lens in {lenses!r}]
found = parallel([lambda j=j: scan(j[0], j[1]) for j in jobs])
candidates = dedupe(flatten(found))
{check_part}phase("report")
result = report(kept)
"""


def plan_from_sheet(sheet: str) -> str:
    """Read the fact sheet's shard options, scan and skeptic prices and budget; choose."""
    options = [
        (int(target.replace(",", "")), int(count))
        for target, count in re.findall(r"([\d,]+) -> (\d+)", sheet)
    ]
    budget = _number(r"Budget: ([\d.]+) credits", sheet, 20.0)
    scan_price = _number(r"scan \([^,]*, ([\d.]+)\)", sheet, 1.0)
    skeptic_price = _number(r"skeptic \([^,]*, ([\d.]+)\)", sheet, 0.25)
    lenses_all = ["boundaries", "logic", "state", "general"]
    options = sorted(options) or [(20_000, 1)]

    def fits(count: int, lens_count: int, skeptics: int) -> bool:
        scans = count * lens_count
        checks = skeptics * math.ceil(scans * 1.5 / 8)
        return scans * scan_price + checks * skeptic_price <= 0.8 * budget

    # Shard size first (the sheet: smaller shards find more), then as many lenses as still fit.
    for target, count in options:
        if fits(count, 1, 3):
            lenses = max(n for n in (1, 2, 4) if fits(count, n, 3))
            return lead_plan(target, lenses_all[-lenses:], 3)
    return lead_plan(options[-1][0], ["general"], 0)


def _file_tokens(user: str) -> list[tuple[str, float]]:
    """Each file shown in a scan message, with its tokens there."""
    marks = list(_FILE.finditer(user))
    ends = [m.start() for m in marks[1:]] + [len(user)]
    return [(m.group(1).strip(), (end - m.start()) / CHARS_PER_TOKEN)
            for m, end in zip(marks, ends, strict=True)]  # fmt: skip


def _number(pattern: str, text: str, default: float) -> float:
    found = re.search(pattern, text)
    return float(found.group(1)) if found else default
