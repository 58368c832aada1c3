"""The audited library as the kit sees it: its files, their module names, their callables.

Every word works from one listing, so the files a worker is shown, the files a finding may name
and the functions a verification may call all agree. The listing never includes ``hidden/``,
``__pycache__`` or a file that only a symlink leading out of the corpus reaches.
"""

from __future__ import annotations

import ast
import threading
from pathlib import Path

from kit.paths import AUDITED, HIDDEN, PathRefused, safe_path

__all__ = ["PARSE_LOCK", "audited_root", "definitions", "library_files", "module_name"]

SKIPPED_FOLDERS = frozenset({HIDDEN, "__pycache__"})
# Words run on many worker threads; every ast.parse of the kit takes this lock, because
# CPython 3.11's parser has been seen to fail when called on parallel threads.
PARSE_LOCK = threading.Lock()


def audited_root(corpus: str | Path) -> Path:
    """The folder agents read, resolved: ``corpus/audited`` when a benchmark folder is given.

    A benchmark folder also holds the unplanted originals and the answer key; taking its
    ``audited`` copy keeps both out of reach. Raises :class:`PathRefused` for a root under
    ``hidden/`` and ``FileNotFoundError`` for one that is not a folder.
    """
    root = Path(corpus)
    if (root / AUDITED).is_dir():
        root = root / AUDITED
    resolved = root.resolve()
    if HIDDEN in root.parts or HIDDEN in resolved.parts:
        raise PathRefused(f"The corpus {str(corpus)!r} lies in a hidden folder; refused.")
    if not resolved.is_dir():
        raise FileNotFoundError(f"The corpus folder {str(corpus)!r} does not exist.")
    return resolved


def library_files(root: Path) -> list[str]:
    """Every ``.py`` file under ``root``, relative and POSIX, sorted; never one under hidden/."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if SKIPPED_FOLDERS & set(relative.parts):
            continue
        try:
            resolved = safe_path(root, relative.as_posix())
        except PathRefused:
            continue  # a symlink that leads out of the corpus or into hidden/
        if resolved.is_file():
            found.append(relative.as_posix())
    return found


def module_name(relative: str) -> str:
    """The import name of a library file: ``pkg/mod.py`` -> ``pkg.mod``, ``pkg/__init__.py``
    -> ``pkg``.

    >>> module_name("algos/heaps.py"), module_name("algos/__init__.py")
    ('algos.heaps', 'algos')
    """
    parts = relative.removesuffix(".py").split("/")
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def definitions(source: str) -> set[str]:
    """Qualified names of the callables a module defines: functions, classes, ``Class.method``.

    Definitions under module-level ``if``/``try`` count; functions nested in functions do not
    (they cannot be reached by name). Returns an empty set for source that does not parse.

    >>> sorted(definitions("class A:\\n    def f(self): pass\\ndef g(): pass\\n"))
    ['A', 'A.f', 'g']
    """
    try:
        with PARSE_LOCK:
            tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    _collect(tree, [], names)
    return names


def _collect(node: ast.AST, scope: list[str], names: set[str]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef):
            names.add(".".join([*scope, child.name]))
            _collect(child, [*scope, child.name], names)
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(".".join([*scope, child.name]))
        elif isinstance(child, ast.If | ast.Try | ast.ExceptHandler | ast.With):
            _collect(child, scope, names)
