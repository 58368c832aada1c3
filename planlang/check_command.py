"""The body of ``planlang check``, where a user expects ruff.

Paths may be files, folders (searched for ``*.py``, hidden folders and ``__pycache__`` left out)
or ``-`` for the standard input (named by ``--stdin-filename``). Besides what the checker
refuses, a name the plan reads but nothing defines (not bound by the plan, not a builtin, not a
host word of the run or of the project's providers) is reported as PL301, as ruff reports
F821. The project is ``planlang.toml``, found by walking up from the plan's folder; loading its
host providers is the only time ``check`` imports the runtime.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable
from pathlib import Path

import click

from planlang.check import check
from planlang.cli_support import (
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
    PlanFile,
    PlanFileError,
    find_config,
    read_plan,
    read_stdin,
)
from planlang.errors import Problem
from planlang.language import ALLOWED_BUILTINS, FORBIDDEN_NAMES

__all__ = ["RUN_WORDS", "check_paths", "undefined_names"]

# What every run gives a plan, whatever the project: planlang.binding's words and the inputs.
RUN_WORDS = frozenset({"agent", "parallel", "stream", "phase", "log", "inputs"})
_CONSTANTS = frozenset({"True", "False", "None", "print"})


def _plan_files(paths: Iterable[str], stdin_filename: str | None) -> Iterable[PlanFile | str]:
    """Each plan to check, or the one-line reason it cannot be read."""
    for path in paths:
        if path == "-":
            try:
                yield read_stdin(stdin_filename or "-")
            except PlanFileError as error:
                yield error.message
            continue
        folder = Path(path)
        if folder.is_dir():
            found = sorted(p for p in folder.rglob("*.py")  # a folder named x.py: not a plan
                           if not _hidden(p.relative_to(folder)) and not p.is_dir())  # fmt: skip
            if not found:
                yield f"{path}: no *.py file in this folder"
            for file in found:
                yield from _read(str(file))
            continue
        yield from _read(path)


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") or part == "__pycache__" for part in relative.parts)


def _read(path: str) -> Iterable[PlanFile | str]:
    try:
        yield read_plan(path)
    except PlanFileError as error:
        yield error.message


def undefined_names(source: str, filename: str, known: frozenset[str]) -> list[Problem]:
    """Names read but bound nowhere in the plan, not builtins and not in ``known``."""
    try:
        tree = ast.parse(source, filename)
    except (SyntaxError, ValueError, MemoryError, RecursionError):  # too deep for the parser:
        return []  # the check reported it already (PL003)
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.Lambda):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            bound.update(a.arg for a in every if a is not None)
            if isinstance(node, ast.FunctionDef):
                bound.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):  # refused, but it binds the name
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ClassDef):
            bound.add(node.name)
    # Names the checker already refuses under their own code are not reported twice.
    refused = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
               and (n.id in FORBIDDEN_NAMES or (n.id.startswith("_") and n.id != "_"))}  # fmt: skip
    defined = bound | known | ALLOWED_BUILTINS | _CONSTANTS | refused
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in defined:
            problems.append(Problem(filename, node.lineno, node.col_offset + 1, "PL301",
                                    f"undefined name '{node.id}': the plan does not define it "
                                    "and no host word has that name"))  # fmt: skip
    return problems


def _host_names(plan_path: str, given: str | None = None) -> tuple[frozenset[str], str | None]:
    """The host words of the project above ``plan_path`` (and its file), or none; its MCP
    servers' names are read from the file (no server is started to check a plan)."""
    start = Path.cwd() if plan_path == "-" else Path(plan_path).resolve().parent
    config = Path(given) if given is not None else find_config(start)
    if config is None:
        return frozenset(), None
    import tomllib

    from planlang.project import ProjectError, load_project
    from runtime import LLM, Run

    try:  # the file price and run would refuse is refused here too, with their words
        project = load_project(config)
        table = tomllib.loads(config.read_text(encoding="utf-8"))
    except ProjectError as error:
        raise PlanFileError(str(error)) from None
    except (OSError, ValueError) as error:
        raise PlanFileError(f"{config}: {error}") from None
    servers = table.get("mcp", {}).get("servers", {})  # each a host object, named as configured
    tools = frozenset(servers) if isinstance(servers, dict) else frozenset()
    if not table.get("plan", {}).get("host"):
        return tools, str(config)
    try:
        provide = project.host_provider()
        words = provide(Run("check", llm=LLM(settings=project.settings))) if provide else {}
    except ProjectError as error:
        raise PlanFileError(str(error)) from None
    return frozenset(words) | tools, str(config)


def check_paths(paths: tuple[str, ...], output_format: str, stdin_filename: str | None,
                config: str | None = None) -> int:  # fmt: skip
    problems: list[Problem] = []
    errors: list[str] = []
    checked = 0
    if stdin_filename is not None and "-" not in paths:  # it would be silently ignored
        errors.append(f"--stdin-filename {stdin_filename}: it names the plan read from '-', "
                      "and no path is '-'; add '-' or leave the option out")  # fmt: skip
        _report(problems, errors, checked, output_format)
        return EXIT_USAGE
    hosts: dict[str, frozenset[str]] = {}
    for plan in _plan_files(paths, stdin_filename):
        if isinstance(plan, str):
            errors.append(plan)
            continue
        checked += 1
        found = check(plan.source, filename=plan.path).problems
        if not any(p.code == "PL001" for p in found):
            from_stdin = "-" in paths and plan.path == (stdin_filename or "-")
            try:
                names, project = _host_names("-" if from_stdin else plan.path, config)
            except PlanFileError as error:
                errors.append(error.message)
                continue
            known = hosts.setdefault(project or "", RUN_WORDS | names)
            found = tuple(sorted({*found, *undefined_names(plan.source, plan.path, known)},
                                 key=lambda p: (p.line, p.col, p.code)))  # fmt: skip
        problems.extend(found)
    _report(problems, errors, checked, output_format)
    return EXIT_USAGE if errors else EXIT_REFUSED if problems else EXIT_OK


def _report(problems: list[Problem], errors: list[str], checked: int, output_format: str) -> None:
    if output_format == "json":
        click.echo(json.dumps({"ok": not problems and not errors, "checked": checked,
                               "problems": [p.as_dict() for p in problems], "errors": errors},
                              indent=2))  # fmt: skip
        return
    for problem in problems:
        if output_format == "github":  # a workflow command: an annotation on the line
            click.echo(f"::error file={_property(problem.filename)},line={problem.line},"
                       f"col={problem.col},title={problem.code}::"
                       f"{_data(f'{problem.code} {problem.message}')}")  # fmt: skip
        else:
            click.echo(problem.render())
    for message in errors:
        click.echo(f"error: {message}", err=True)
    if problems:
        n = len(problems)
        click.echo(f"Found {n} problem{'s' if n != 1 else ''}.", err=True)
    elif not errors:
        said = "The plan passed" if checked == 1 else f"All {checked} plans passed"
        click.echo(f"{said} the check.", err=True)


def _data(text: str) -> str:
    """A workflow command's message, escaped as GitHub reads it back (% first)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    """A workflow command's property (the file): a ',' or ':' in it would end the value."""
    return _data(text).replace(":", "%3A").replace(",", "%2C")
