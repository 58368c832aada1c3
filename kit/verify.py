"""External verification: run a finding's failing call against the audited library.

A skeptic that reads ``actual`` next to ``expected`` judges from evidence instead of from the
worker's word. But the call is model-written, so it is treated as hostile twice over:

1. statically, nothing but ``f(...)``, ``mod.f(...)`` or ``Class.method(...)`` naming a callable
   the library defines, with literal arguments (``ast.literal_eval``), passes; everything else
   is refused with a sentence saying why, and never reaches a process;
2. the call runs in a child process (``kit/verify_child.py`` under ``python -I``) on a copy of
   the corpus, in a scratch folder, with wall, CPU, memory, file and process limits and an
   audit hook that refuses sockets, new processes and writes outside the scratch folder.
"""

from __future__ import annotations

import ast
import json
import math
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.library import (
    PARSE_LOCK,
    SKIPPED_FOLDERS,
    audited_root,
    definitions,
    library_files,
    module_name,
)
from kit.paths import PathRefused, normalise, safe_path

__all__ = ["CallRefused", "LibraryIndex", "ParsedCall", "Verifier", "parse_call"]

CHILD = Path(__file__).with_name("verify_child.py")
MAX_CALL_CHARS = 2000
MAX_NAME_PARTS = 6
MAX_REPR_CHARS = 2000
OUTCOMES = ("value", "exception", "timeout")
GRACE_SECONDS = 3.0  # the child's own start-up and import time, on top of the call's timeout
# The child sees no environment of ours (no API keys); -I ignores PYTHON* variables anyway.
CHILD_ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}

_NOT_LITERAL = {
    ast.Call: "calls a function",
    ast.Lambda: "is a lambda",
    ast.ListComp: "is a comprehension",
    ast.SetComp: "is a comprehension",
    ast.DictComp: "is a comprehension",
    ast.GeneratorExp: "is a generator expression",
    ast.Attribute: "reads an attribute",
    ast.Subscript: "subscripts a value",
    ast.NamedExpr: "assigns with :=",
    ast.JoinedStr: "is an f-string",
    ast.Starred: "unpacks with *",
    ast.Await: "awaits",
    ast.Yield: "yields",
    ast.IfExp: "is a conditional expression",
    ast.BoolOp: "is a boolean operation",
    ast.Compare: "is a comparison",
}


class CallRefused(ValueError):
    """A failing call that verification will not run; the message says why."""


@dataclass(frozen=True)
class ParsedCall:
    """A call that passed the static check: a dotted name and literal argument sources."""

    names: tuple[str, ...]
    args: tuple[str, ...]
    kwargs: dict[str, str] = field(default_factory=dict)


def parse_call(text: Any) -> ParsedCall:
    """Check ``text`` is one call of a dotted name with literal arguments, or raise CallRefused."""
    if not isinstance(text, str):
        raise CallRefused(f"The failing call must be a text, not {text!r:.80}.")
    source = text.strip()
    if not source:
        raise CallRefused("The failing call is empty.")
    if len(source) > MAX_CALL_CHARS:
        raise CallRefused(f"The failing call is {len(source)} characters long, over the limit "
                          f"of {MAX_CALL_CHARS}.")  # fmt: skip
    shown = source if len(source) <= 80 else source[:77] + "..."
    try:
        with PARSE_LOCK:
            tree = ast.parse(source, mode="eval")
    except SyntaxError as error:
        raise CallRefused(f"The failing call {shown!r} is not one Python expression: "
                          f"{error.msg}.") from None  # fmt: skip
    except (RecursionError, MemoryError, ValueError):
        raise CallRefused(f"The failing call {shown!r} is nested too deeply to read.") from None
    call = tree.body
    if not isinstance(call, ast.Call):
        raise CallRefused(f"The failing call {shown!r} must be a single call like f(...), not "
                          f"an expression of type {type(call).__name__}.")  # fmt: skip
    names = _dotted(call.func, shown)
    args = tuple(_literal(arg, f"Argument {i + 1}") for i, arg in enumerate(call.args))
    kwargs: dict[str, str] = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            raise CallRefused(f"Keyword unpacking (**...) in {shown!r} is refused; give each "
                              "argument literally.")  # fmt: skip
        kwargs[keyword.arg] = _literal(keyword.value, f"Argument {keyword.arg}=")
    return ParsedCall(names, args, kwargs)


def _dotted(node: ast.expr, shown: str) -> tuple[str, ...]:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        raise CallRefused(f"The called function in {shown!r} must be a plain or dotted name "
                          f"(f, mod.f, Class.method), not an expression of type "
                          f"{type(node).__name__}.")  # fmt: skip
    parts.append(node.id)
    parts.reverse()
    for part in parts:
        if part.startswith("__") or part.endswith("__"):
            raise CallRefused(f"The name {part!r} in {shown!r} is refused: double-underscore "
                              "names reach interpreter internals.")  # fmt: skip
    if len(parts) > MAX_NAME_PARTS:
        raise CallRefused(f"The name {'.'.join(parts)!r} has {len(parts)} parts, over the "
                          f"limit of {MAX_NAME_PARTS}.")  # fmt: skip
    return tuple(parts)


def _literal(node: ast.expr, where: str) -> str:
    segment = ast.unparse(node)
    shown = segment if len(segment) <= 60 else segment[:57] + "..."
    for inner in _nodes(node):
        if isinstance(inner, ast.Name):
            raise CallRefused(f"{where} ({shown}) uses the name {inner.id!r}; only literal "
                              "arguments are accepted.")  # fmt: skip
        why = _NOT_LITERAL.get(type(inner))
        if why is not None:
            raise CallRefused(f"{where} ({shown}) {why}; only literal arguments are "
                              "accepted.")  # fmt: skip
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise CallRefused(
            f"{where} ({shown}) is not a literal; only numbers, strings, tuples, lists, dicts, "
            "sets, None, True and False are accepted."
        ) from None
    return segment


def _nodes(node: ast.AST) -> list[ast.AST]:
    """Every node of ``node``, not descending into ``set()`` (whose ``set`` is no free name)."""
    found, todo = [], [node]
    while todo:
        current = todo.pop()
        if not _is_empty_set(current):
            found.append(current)
            todo.extend(ast.iter_child_nodes(current))
    return found


def _is_empty_set(node: ast.AST) -> bool:
    """``set()`` is the one call ``ast.literal_eval`` accepts (there is no empty-set literal)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "set"
        and not node.args
        and not node.keywords
    )


class LibraryIndex:
    """Which callables each module of the library defines, read statically (never imported)."""

    def __init__(self, defs: Mapping[str, set[str]], modules_of_files: Mapping[str, str]):
        self.defs = dict(defs)
        self.modules_of_files = dict(modules_of_files)

    @classmethod
    def build(cls, root: Path, files: list[str]) -> LibraryIndex:
        defs: dict[str, set[str]] = {}
        modules: dict[str, str] = {}
        for path in files:
            module = module_name(path)
            modules[path] = module
            text = safe_path(root, path).read_text(encoding="utf-8", errors="replace")
            defs.setdefault(module, set()).update(definitions(text))
        return cls(defs, modules)

    def resolve(
        self, names: tuple[str, ...], file: str | None = None
    ) -> tuple[str, tuple[str, ...]]:
        """``(module, attribute path)`` of the callable ``names`` means; CallRefused if none.

        ``f`` and ``Class.method`` are looked up in the finding's own file first, then in
        the whole library; ``mod.f`` and ``pkg.mod.f`` name the module by its last parts (or
        the package it is in).
        """
        dotted = ".".join(names)
        home = self.modules_of_files.get(normalise(file)) if file else None
        if home is not None and dotted in self.defs.get(home, set()):
            return home, names
        found: set[tuple[str, tuple[str, ...]]] = set()
        for cut in range(len(names) - 1, 0, -1):
            prefix, rest = list(names[:cut]), names[cut:]
            for module, defined in self.defs.items():
                parts = module.split(".")
                named = parts[-cut:] == prefix or parts[:cut] == prefix
                if named and ".".join(rest) in defined:
                    found.add((module, rest))
            if found:
                break
        if not found:
            found = {(m, names) for m, defined in self.defs.items() if dotted in defined}
        if len(found) == 1:
            return found.pop()
        if home is not None and len({m for m, _ in found if m == home}) == 1:
            return next(item for item in found if item[0] == home)
        if not found:
            raise CallRefused(f"The function {dotted!r} is not defined in the audited library.")
        where = ", ".join(sorted(m for m, _ in found))
        raise CallRefused(f"The name {dotted!r} is ambiguous: it is defined in {where}; name "
                          "the module too.")  # fmt: skip


class Verifier:
    """Runs failing calls for one corpus; the corpus copy is made once and removed at the end."""

    def __init__(
        self,
        corpus: str | Path,
        *,
        timeout: float = 5.0,
        memory_mb: int = 512,
        cpu_seconds: int | None = None,
        files: list[str] | None = None,
    ):
        if not timeout > 0 or not math.isfinite(timeout):
            raise ValueError(
                f"The verification timeout must be a positive number, got {timeout!r}."
            )
        if memory_mb < 32:
            raise ValueError(f"The memory limit must be at least 32 MB, got {memory_mb!r}.")
        self.root = audited_root(corpus)
        self.timeout = float(timeout)
        self.memory_mb = int(memory_mb)
        self.cpu_seconds = cpu_seconds if cpu_seconds is not None else math.ceil(timeout) + 1
        self.files = files if files is not None else library_files(self.root)
        self.index = LibraryIndex.build(self.root, self.files)
        self._lock = threading.Lock()
        self._copy: Path | None = None

    def check(self, finding: Any) -> tuple[str, tuple[str, ...], ParsedCall]:
        """The module, attribute path and parsed call a finding asks to run; or CallRefused."""
        call_text, file = _call_and_file(finding)
        parsed = parse_call(call_text)
        module, target = self.index.resolve(parsed.names, file)
        return module, target, parsed

    def verify(self, finding: Any) -> dict[str, Any]:
        """``{ran, refused, outcome, actual, expected}`` for ``finding`` (or a call text)."""
        expected = "" if not isinstance(finding, Mapping) else _text(finding.get("expected"))
        try:
            module, target, parsed = self.check(finding)
        except CallRefused as refusal:
            return _result(False, str(refusal), None, "", expected)
        outcome, actual = self._run(module, target, parsed)
        if outcome is None:  # the sandbox itself failed: no evidence either way
            return _result(False, actual, None, "", expected)
        return _result(True, None, outcome, actual, expected)

    def close(self) -> None:
        with self._lock:
            copy, self._copy = self._copy, None
        if copy is not None:
            shutil.rmtree(copy.parent, ignore_errors=True)

    # -- running -----------------------------------------------------------------------------

    def _library_copy(self) -> Path:
        with self._lock:
            if self._copy is None:
                base = Path(tempfile.mkdtemp(prefix="kit-verify-lib-"))
                weakref.finalize(self, shutil.rmtree, base, ignore_errors=True)
                shutil.copytree(self.root, base / "lib", ignore=self._ignore)
                self._copy = base / "lib"
            return self._copy

    def _ignore(self, folder: str, names: list[str]) -> set[str]:
        skipped = set()
        for name in names:
            relative = (Path(folder) / name).relative_to(self.root).as_posix()
            try:
                safe_path(self.root, relative)
            except PathRefused:
                skipped.add(name)  # hidden/, or a symlink leading out of the corpus
            if name in SKIPPED_FOLDERS:
                skipped.add(name)
        return skipped

    def _run(
        self, module: str, target: tuple[str, ...], parsed: ParsedCall
    ) -> tuple[str | None, str]:
        library = self._library_copy()
        nonce = secrets.token_hex(16)
        with tempfile.TemporaryDirectory(prefix="kit-verify-", ignore_cleanup_errors=True) as work:
            job = {
                "lib": str(library), "scratch": work, "module": module, "target": list(target),
                "args": list(parsed.args), "kwargs": parsed.kwargs, "nonce": nonce,
                "timeout": self.timeout, "memory_bytes": self.memory_mb * 2**20,
                "cpu_seconds": self.cpu_seconds, "max_repr": MAX_REPR_CHARS,
                "open_files": 64, "file_bytes": 16 * 2**20,
            }  # fmt: skip
            try:
                done = subprocess.run(
                    [sys.executable, "-I", "-B", str(CHILD)],
                    input=json.dumps(job), capture_output=True, text=True, cwd=work,
                    env={**CHILD_ENV, "TMPDIR": work}, timeout=self.timeout + GRACE_SECONDS,
                    start_new_session=True,
                )  # fmt: skip
            except subprocess.TimeoutExpired:
                return "timeout", f"timeout: the call did not finish within {self.timeout:g} s"
            except OSError as error:  # no process could start (fork refused, no memory)
                return None, f"The verification process could not start: {error}."
            outcome, actual = self._outcome(done, nonce)
        # Temporary folders would make the same call read differently each run (and a replay
        # from the ledger miss); they are no business of the skeptic's either.
        for folder, name in ((work, "<scratch>"), (str(library), "<library>")):
            actual = actual.replace(folder, name)
        return outcome, actual

    def _outcome(
        self, done: subprocess.CompletedProcess[str], nonce: str
    ) -> tuple[str | None, str]:
        for line in reversed(done.stdout.splitlines()):
            if line.startswith(nonce):
                try:
                    answer = json.loads(line[len(nonce) :])
                    outcome, actual = str(answer["outcome"]), str(answer["actual"])
                    return (outcome if outcome in OUTCOMES else None), actual
                except (json.JSONDecodeError, KeyError, TypeError):
                    break
        code = done.returncode
        if code in (-signal.SIGXCPU, -signal.SIGKILL):
            return "timeout", f"timeout: the call used more than {self.cpu_seconds} s of CPU"
        if code < 0:
            name = signal.Signals(-code).name
            return "exception", f"Crashed: the process was killed by {name}"
        last = (done.stderr.strip().splitlines() or [""])[-1][:300]
        return None, (f"The verification process ended without a result (exit code {code})"
                      + (f": {last}" if last else "."))  # fmt: skip


def _call_and_file(finding: Any) -> tuple[Any, str | None]:
    if isinstance(finding, str):
        return finding, None
    if not isinstance(finding, Mapping):
        raise CallRefused(f"verify() takes a finding (a dict with failing_call), not "
                          f"{finding!r:.80}.")  # fmt: skip
    file = finding.get("file")
    return finding.get("failing_call"), file if isinstance(file, str) else None


def _text(value: Any) -> str:
    return "" if value is None else value if isinstance(value, str) else str(value)


def _result(
    ran: bool, refused: str | None, outcome: str | None, actual: str, expected: str
) -> dict[str, Any]:
    return {"ran": ran, "refused": refused, "outcome": outcome, "actual": actual,
            "expected": expected}  # fmt: skip
