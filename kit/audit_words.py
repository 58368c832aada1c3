"""The audit kit's host words: what a plan calls to read, scan, judge and report on a library.

``audit_words(run, corpus=...)`` is the provider registered in ``planlang.toml`` (and used by the
lead and the benchmark): it returns the words of docs/KIT.md bound to one ``runtime.Run``,
so every model call they make is a worker of that run, priced and budgeted like the plan's own.
Words take and return plain JSON data. Every file they read goes through ``kit.paths``, which
refuses ``hidden/`` and anything outside the corpus.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kit import findings as found
from kit.library import PARSE_LOCK, audited_root, library_files
from kit.paths import PathRefused, normalise, read_text, safe_path
from kit.prompts import LENSES, Prompts, load_prompts
from kit.shards import estimate_tokens, pack
from kit.source import FunctionSpan, function_spans
from kit.verify import Verifier
from runtime import Run

__all__ = ["LENSES", "AuditKit", "audit_words", "render_file"]

MAX_FINDINGS = 20  # per scan answer: more from one worker is noise, and costs output tokens
MAX_CODE_LINES = 150  # of one function shown to a skeptic
CONTEXT_LINES = 10  # around a module-level line shown to a skeptic


def audit_words(
    run: Run,
    *,
    corpus: str,
    shard_tokens: int = 20000,
    verify_timeout: float = 5.0,
    **options: Any,
) -> dict[str, Any]:
    """The kit's words for ``corpus``, bound to ``run``.

    Options this provider reads: ``verify_memory_mb`` (default 512) and ``prompts`` (a path to
    another prompts file). Others are ignored: a project hands the same options to every
    provider it registers.
    """
    kit = AuditKit(
        run,
        corpus=corpus,
        shard_tokens=shard_tokens,
        verify_timeout=verify_timeout,
        verify_memory_mb=int(options.get("verify_memory_mb", 512)),
        prompts=load_prompts(options.get("prompts")),
    )
    return kit.words()


def render_file(path: str, text: str) -> str:
    """A file as workers see it: ``=== FILE: <path> ===`` then ``<n>: <text>`` per line."""
    body = "".join(f"{n}: {line}\n" for n, line in enumerate(text.splitlines(), start=1))
    return f"=== FILE: {path} ===\n{body}"


class AuditKit:
    """The state behind the words: the corpus listing, file caches and the verifier."""

    def __init__(
        self,
        run: Run,
        *,
        corpus: str | Path,
        shard_tokens: int = 20000,
        verify_timeout: float = 5.0,
        verify_memory_mb: int = 512,
        prompts: Prompts | None = None,
    ):
        if isinstance(shard_tokens, bool) or not isinstance(shard_tokens, int) or shard_tokens < 1:
            raise ValueError(f"shard_tokens must be a positive integer, got {shard_tokens!r}.")
        self.run = run
        self.root = audited_root(corpus)
        self.shard_tokens = shard_tokens
        self.verify_timeout = verify_timeout
        self.verify_memory_mb = verify_memory_mb
        self.prompts = prompts or load_prompts()
        self.paths = library_files(self.root)
        self._texts: dict[str, str] = {}
        self._spans: dict[str, list[FunctionSpan]] = {}
        self._verifier: Verifier | None = None
        self._lock = threading.Lock()

    def words(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "shards": self.shards,
            "numbered": self.numbered,
            "scan": self.scan,
            "dedupe": found.dedupe,
            "key_of": found.key_of,
            "batches": found.batches,
            "flatten": found.flatten,
            "check": self.check,
            "vote": found.vote,
            "verify": self.verify,
            "report": found.report,
            "LENSES": LENSES,
        }

    # -- reading -----------------------------------------------------------------------------

    def text(self, path: str) -> str:
        """A library file's text (through the safe reader; cached)."""
        relative = self._library_path(path)
        with self._lock:
            cached = self._texts.get(relative)
        if cached is None:
            cached = read_text(self.root, relative)
            with self._lock:
                self._texts[relative] = cached
        return cached

    def spans(self, path: str) -> list[FunctionSpan]:
        with self._lock:
            cached = self._spans.get(path)
        if cached is None:
            text = self.text(path)
            try:
                with PARSE_LOCK:
                    cached = function_spans(text)
            except (SyntaxError, ValueError):
                cached = []
            with self._lock:
                self._spans[path] = cached
        return cached

    def _library_path(self, path: Any) -> str:
        if not isinstance(path, str | Path):
            raise TypeError(f"A file of the corpus is named by a path, not {path!r}.")
        resolved = safe_path(self.root, str(path))  # refuses hidden/ and escapes, with reasons
        relative = resolved.relative_to(self.root).as_posix()
        if relative not in self.paths:
            raise PathRefused(f"The path {str(path)!r} is not a Python file of the corpus.")
        return relative

    def files(self) -> list[dict[str, Any]]:
        """Every ``.py`` file: ``{path, lines, tokens}`` (tokens of its numbered text)."""
        return [
            {
                "path": path,
                "lines": len(self.text(path).splitlines()),
                "tokens": estimate_tokens(self.numbered(path)),
            }
            for path in self.paths
        ]

    def numbered(self, path: str) -> str:
        relative = self._library_path(path)
        return render_file(relative, self.text(relative))

    def shards(self, target_tokens: int | None = None) -> list[dict[str, Any]]:
        """The corpus packed into shards of about ``target_tokens`` (default: the project's)."""
        target = self.shard_tokens if target_tokens is None else target_tokens
        if isinstance(target, bool) or not isinstance(target, int) or target < 1:
            raise ValueError(f"shards() needs a positive whole number of tokens, got {target!r}.")
        packed = pack(list(self.paths), target, root=self.root)
        return [
            {
                "id": f"s{index}",
                "paths": list(shard.files),
                "tokens": estimate_tokens("".join(self.numbered(p) for p in shard.files)),
            }
            for index, shard in enumerate(packed, start=1)
        ]

    # -- scan --------------------------------------------------------------------------------

    def scan(
        self, shard: Any, lens: str = "general", sample: int = 0, model: str = "scan"
    ) -> list[dict[str, Any]]:
        """One worker reads ``shard`` through ``lens``; its findings, normalised.

        Findings whose file is not in the shard are dropped; a failed worker gives ``[]``.
        """
        shard_id, paths = self._shard(shard)
        system = self.prompts.scan_system(lens)
        text = "\n".join(self.numbered(path) for path in paths)
        prompt = (
            f"Lens: {lens}. Shard {shard_id}: {len(paths)} file(s).\n"
            f'Answer {{"findings": [...]}} (an empty list when you find nothing).\n\n{text}'
        )
        longest = max(len(self.text(path).splitlines()) for path in paths)
        label = f"scan {shard_id} {lens}" + (f" sample {sample}" if sample else "")
        answer = self.run.agent(
            prompt,
            schema=_findings_schema(paths, max(longest, 1)),
            model=model,
            label=label,
            system=system,
            sample=sample,
        )
        if not isinstance(answer, Mapping):
            return []
        raws = answer.get("findings")
        normalised = (
            found.normalise_finding(raw, paths, self.spans)
            for raw in (raws if isinstance(raws, list) else [])
        )
        return [finding for finding in normalised if finding is not None]

    def _shard(self, shard: Any) -> tuple[str, list[str]]:
        if isinstance(shard, Mapping):
            shard_id, paths = str(shard.get("id", "shard")), shard.get("paths")
        elif isinstance(shard, str):
            shard_id, paths = normalise(shard), [shard]
        else:
            shard_id, paths = "shard", shard
        if not isinstance(paths, list | tuple) or not paths:
            raise ValueError(
                f"scan() takes a shard from shards() (with its paths), not {shard!r:.120}."
            )
        relative = [self._library_path(path) for path in paths]
        return shard_id, list(dict.fromkeys(relative))

    # -- skeptics ----------------------------------------------------------------------------

    def check(
        self,
        batch: Sequence[Any],
        sample: int = 0,
        model: str = "skeptic",
        evidence: Sequence[Any] | None = None,
    ) -> list[dict[str, Any]]:
        """A skeptic's verdict on each place in ``batch``: ``[{key, real, reason}]``.

        ``evidence``, when given, holds one ``verify()`` result (or None) per item of the
        batch. A skeptic that fails, or skips a key, counts as "not real" for that key.
        """
        items = list(batch)
        if evidence is not None and len(evidence) != len(items):
            raise ValueError(f"check() got {len(evidence)} evidence items for a batch of "
                             f"{len(items)}; give one per finding (None for none).")  # fmt: skip
        reports: dict[str, dict[str, Any]] = {}
        shown: list[dict[str, Any]] = []
        for index, item in enumerate(items):
            if not isinstance(item, Mapping):
                continue
            key = found.key_of(item)
            if key in reports:
                continue
            reports[key] = self._report_for_skeptic(key, item)
            result = evidence[index] if evidence is not None else None
            if isinstance(result, Mapping):
                shown.append(_evidence_for_skeptic(key, item, result))
        if not reports:
            return []
        keys = list(reports)
        prompt = (
            f"Judge these {len(keys)} bug report(s); give one verdict per key.\n\n"
            f"FINDINGS:\n{json.dumps(list(reports.values()), indent=1, ensure_ascii=False)}\n"
        )
        if shown:
            prompt += f"\nVERIFICATION:\n{json.dumps(shown, indent=1, ensure_ascii=False)}\n"
        label = f"check {keys[0]}" + (f" +{len(keys) - 1}" if len(keys) > 1 else "")
        answer = self.run.agent(
            prompt,
            schema=_verdicts_schema(keys),
            model=model,
            label=label + (f" sample {sample}" if sample else ""),
            system=self.prompts.skeptic,
            sample=sample,
        )
        given: dict[str, dict[str, Any]] = {}
        verdicts = answer.get("verdicts") if isinstance(answer, Mapping) else None
        for verdict in verdicts if isinstance(verdicts, list) else []:
            if isinstance(verdict, Mapping) and verdict.get("key") in reports:
                given.setdefault(str(verdict["key"]), dict(verdict))
        missing = "no verdict: the skeptic failed" if answer is None else "no verdict given"
        return [
            {
                "key": key,
                "real": given.get(key, {}).get("real") is True,
                "reason": str(given.get(key, {}).get("reason", missing)),
            }
            for key in keys
        ]

    def _report_for_skeptic(self, key: str, finding: Mapping[str, Any]) -> dict[str, Any]:
        shown: dict[str, Any] = {"key": key}
        for name in ("file", "line", "function", "claim", "failing_call", "expected"):
            shown[name] = finding.get(name)
        shown["code"] = self._code_of(finding)
        return shown

    def _code_of(self, finding: Mapping[str, Any]) -> str:
        """The numbered lines of the finding's function (or around its line)."""
        try:
            path = self._library_path(str(finding.get("file", "")))
        except (PathRefused, TypeError):
            return ""
        lines = self.text(path).splitlines()
        function = finding.get("function")
        span = next((s for s in self.spans(path) if s.name == function), None)
        if span is not None:
            start, end = span.start, min(span.end, span.start + MAX_CODE_LINES - 1)
        else:
            line = found.as_line(finding.get("line")) or 1
            start, end = max(line - CONTEXT_LINES, 1), line + CONTEXT_LINES
        end = min(end, len(lines))
        return "".join(f"{n}: {lines[n - 1]}\n" for n in range(start, end + 1))

    # -- verification ------------------------------------------------------------------------

    def verify(self, finding: Any) -> dict[str, Any]:
        """Run the finding's ``failing_call`` on a copy of the library (see ``kit.verify``)."""
        with self._lock:
            if self._verifier is None:
                self._verifier = Verifier(
                    self.root,
                    timeout=self.verify_timeout,
                    memory_mb=self.verify_memory_mb,
                    files=self.paths,
                )
            verifier = self._verifier
        return verifier.verify(finding)


def _findings_schema(paths: list[str], longest: int) -> dict[str, Any]:
    """The scan answer: findings whose file is one of the shard's and whose line exists."""
    text = {"type": "string", "maxLength": 2000}
    finding = {
        "type": "object",
        "properties": {
            "file": {"type": "string", "enum": list(paths)},
            "line": {"type": "integer", "minimum": 1, "maximum": longest},
            "function": {"type": "string", "maxLength": 200},
            "claim": text,
            "failing_call": text,
            "expected": text,
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": list(found.FIELDS),
    }
    return {
        "type": "object",
        "properties": {"findings": {"type": "array", "items": finding, "maxItems": MAX_FINDINGS}},
        "required": ["findings"],
    }


def _verdicts_schema(keys: list[str]) -> dict[str, Any]:
    verdict = {
        "type": "object",
        "properties": {
            "key": {"type": "string", "enum": keys},
            "real": {"type": "boolean"},
            "reason": {"type": "string", "maxLength": 500},
        },
        "required": ["key", "real", "reason"],
    }
    verdicts = {"type": "array", "items": verdict, "minItems": len(keys), "maxItems": len(keys)}
    return {"type": "object", "properties": {"verdicts": verdicts}, "required": ["verdicts"]}


def _evidence_for_skeptic(
    key: str, finding: Mapping[str, Any], result: Mapping[str, Any]
) -> dict[str, Any]:
    return {
        "key": key,
        "failing_call": finding.get("failing_call"),
        **{name: result.get(name) for name in ("ran", "refused", "outcome", "actual", "expected")},
    }
