"""Find a library's source: a folder, or an installed package located without importing it.

A corpus is an import root (the folder that goes on ``sys.path``) plus the library's Python
files under it. Test folders are left out: they are not what an audit reads, and they would hand
a reader the expected behaviour. Names a doctest may use without importing are read from the
library's ``conftest.py`` (``doctest_namespace["nx"] = networkx``), as pytest would provide them.
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

SKIPPED_DIRS = {"tests", "test", "__pycache__"}


class CorpusError(ValueError):
    """The source folder or package cannot be used as a corpus."""


@dataclass(frozen=True)
class Corpus:
    """Import root, the package folder (relative to it) and the library's ``.py`` files."""

    root: Path
    package: str
    files: tuple[str, ...]
    doctest_globals: dict[str, str] = field(default_factory=dict)

    def module_name(self, relative: str) -> str:
        """``pkg/sub/mod.py`` -> ``pkg.sub.mod``; ``pkg/__init__.py`` -> ``pkg``."""
        parts = relative.removesuffix(".py").split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        return ".".join(parts)


def is_library_file(relative: str) -> bool:
    """True for a library ``.py`` file; False for tests and caches."""
    parts = relative.split("/")
    name = parts[-1]
    if not name.endswith(".py") or any(part in SKIPPED_DIRS for part in parts[:-1]):
        return False
    return not (name.startswith("test_") or name.endswith("_test.py"))


def load_dir(source: str | Path) -> Corpus:
    """A corpus from a folder: a package folder, or an import root holding one package."""
    path = Path(source)
    if not path.is_dir():
        raise CorpusError(f"The source {str(source)!r} is not a folder.")
    path = path.resolve()
    if (path / "__init__.py").is_file():
        return _from_package_dir(path)
    packages = sorted(p for p in path.iterdir() if (p / "__init__.py").is_file())
    if len(packages) != 1:
        names = [p.name for p in packages]
        raise CorpusError(
            f"The source {str(source)!r} must be a package folder or hold exactly one package; "
            f"it holds {names!r}."
        )
    return _from_package_dir(packages[0])


def load_package(name: str) -> Corpus:
    """A corpus from an installed package, located with ``importlib.util.find_spec``."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise CorpusError(f"No installed package named {name!r} was found.")
    return _from_package_dir(Path(next(iter(spec.submodule_search_locations))).resolve())


def _from_package_dir(package_dir: Path) -> Corpus:
    root = package_dir.parent
    files = sorted(
        relative
        for p in package_dir.rglob("*.py")
        if is_library_file(relative := p.relative_to(root).as_posix())
    )
    if not files:
        raise CorpusError(f"The package folder {str(package_dir)!r} holds no Python file.")
    globals_ = _conftest_globals(package_dir / "conftest.py")
    return Corpus(root, package_dir.name, tuple(files), globals_)


def _conftest_globals(conftest: Path) -> dict[str, str]:
    """Names put in pytest's ``doctest_namespace``, mapped to the module they stand for."""
    if not conftest.is_file():
        return {}
    tree = ast.parse(conftest.read_text(encoding="utf-8"))
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name.split(".")[0]] = alias.name
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(target := node.targets[0], ast.Subscript)
            and isinstance(target.value, ast.Name)
            and target.value.id == "doctest_namespace"
            and isinstance(target.slice, ast.Constant)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
        ):
            found[str(target.slice.value)] = aliases[node.value.id]
    return found
