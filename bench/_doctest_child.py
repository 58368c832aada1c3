"""Child process of ``bench.proof``: import one module of a corpus copy, run its doctests.

Run as ``python -s -P _doctest_child.py ROOT MODULE RELPATH RESULT FLAGS GLOBALS`` with no
``PYTHON*`` variable but a fixed hash seed (see ``bench.proof``). ROOT is put first on
``sys.path`` by hand so the examples run against the corpus copy, never an installed package of
the same name. Docstrings are found in the source text (not by introspection) so every example
has an exact file line. The result is written as JSON to RESULT, because examples may print to
or close standard output. What the examples printed is recorded without the corpus copy's
location and without traceback frames: those name a temporary folder, and the answer key must be
the same from run to run and must not tell where the benchmark was built.
"""

import ast
import doctest
import importlib
import json
import os
import sys
import tokenize
import traceback
from typing import Any

_TRACEBACK = "Traceback (most recent call last):\n"


class Recorder(doctest.DocTestRunner):
    """A doctest runner that keeps a pass/fail record per example instead of printing."""

    def __init__(self, optionflags: int, root: str) -> None:
        super().__init__(verbose=False, optionflags=optionflags)
        self.records: list[dict[str, object]] = []
        self.missing: str | None = None
        self.root = root.rstrip(os.sep) + os.sep

    def _record(self, test: Any, example: Any, ok: bool, got: str) -> None:
        self.records.append(
            {
                "name": test.name,
                "line": test.lineno + example.lineno + 1,
                "source": example.source,
                "want": example.want,
                "got": self._portable(got)[:500],
                "ok": ok,
            }
        )

    def _portable(self, got: str) -> str:
        """``got`` with traceback frames elided and the corpus copy's folder removed."""
        start = got.find(_TRACEBACK)  # doctest appends the traceback to what was printed
        if start >= 0:
            lines = got[start:].splitlines(keepends=True)
            # Frames are indented; the exception itself starts at the first unindented line.
            tail = next((i for i, text in enumerate(lines[1:], 1) if text[:1] not in " \t"), 1)
            got = got[:start] + _TRACEBACK + "  ...\n" + "".join(lines[tail:])
        return got.replace(self.root, "")

    def report_start(self, out: Any, test: Any, example: Any) -> None:
        pass

    def report_success(self, out: Any, test: Any, example: Any, got: str) -> None:
        self._record(test, example, True, got)

    def report_failure(self, out: Any, test: Any, example: Any, got: str) -> None:
        self._record(test, example, False, got)

    def report_unexpected_exception(self, out: Any, test: Any, example: Any, exc_info: Any) -> None:
        kind, value = exc_info[0], exc_info[1]
        if issubclass(kind, ModuleNotFoundError) and self.missing is None:
            self.missing = getattr(value, "name", None) or str(value)
        text = "".join(traceback.format_exception_only(kind, value)).strip()
        self._record(test, example, False, text)


def docstrings(tree: ast.Module, module_name: str) -> list[tuple[str, int, str]]:
    """(qualified name, 0-based line of the string, raw docstring) of module/class/def."""
    found: list[tuple[str, int, str]] = []
    doc = ast.get_docstring(tree, clean=False)
    if doc is not None:
        found.append((module_name, tree.body[0].lineno - 1, doc))

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                text = ast.get_docstring(child, clean=False)
                if text is not None:
                    found.append((name, child.body[0].lineno - 1, text))
                if isinstance(child, ast.ClassDef):
                    visit(child, name + ".")
            elif not isinstance(child, ast.expr):
                visit(child, prefix)

    visit(tree, "")
    return found


def _forget_installed(top: str) -> None:
    """Drop the library if the interpreter imported it before us (a ``.pth`` file may import a
    package at startup): the examples must run against the corpus copy, not the installed one."""
    for name in [name for name in sys.modules if name == top or name.startswith(top + ".")]:
        del sys.modules[name]


def _outside(module: Any, root: str) -> str | None:
    """The module's file when it is not under ``root``: a proof of the wrong code."""
    location = getattr(module, "__file__", None)
    base = os.path.realpath(root) + os.sep
    if location and not os.path.realpath(location).startswith(base):
        return str(location)
    return None


def main() -> None:
    root, module_name, relative, result_path, flags, globals_json = sys.argv[1:7]
    sys.path.insert(0, root)
    result: dict[str, object] = {"status": "ok", "detail": "", "examples": []}
    top = module_name.partition(".")[0]
    try:
        _forget_installed(top)
        extra = {
            alias: importlib.import_module(name) for alias, name in json.loads(globals_json).items()
        }
        module = importlib.import_module(module_name)
        elsewhere = _outside(module, root)
        if elsewhere:
            raise ImportError(f"{module_name} was imported from {elsewhere}, not the corpus copy")
    except ModuleNotFoundError as error:
        result.update(status="missing", detail=str(error.name or error))
    except BaseException as error:  # any import failure is reported
        detail = f"{type(error).__name__}: {error}".replace(root.rstrip(os.sep) + os.sep, "")
        result.update(status="import_error", detail=detail[:500])
    else:
        path = os.path.join(root, relative)
        with tokenize.open(path) as handle:  # the file's declared encoding, as import reads it
            tree = ast.parse(handle.read())
        parser = doctest.DocTestParser()
        runner = Recorder(int(flags), root)
        # Examples often call the library by its own name (``wcwidth.ljust(...)`` in
        # ``wcwidth/align.py``) as its docs do; the module's own names and conftest's come first.
        for name, lineno, text in docstrings(tree, module_name):
            globs = {top: sys.modules[top]}
            globs.update(module.__dict__)
            globs.update(extra)
            test = parser.get_doctest(text, globs, name, path, lineno)
            runner.run(test, out=lambda _text: None, clear_globs=True)
        result["examples"] = runner.records
        if runner.missing is not None:
            result.update(status="missing", detail=runner.missing)
    with open(result_path, "w", encoding="utf-8") as handle:
        json.dump(result, handle)


if __name__ == "__main__":
    main()
