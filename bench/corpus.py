"""Find a library's source: a folder, or an installed package located without importing it.

A corpus is an import root (the folder that goes on ``sys.path``) plus the library's Python
files under it: a package folder (regular or namespace), or a single-module library
(``jsonpatch.py``). Test folders are left out: they are not what an audit reads, and they would
hand a reader the expected behaviour; vendored libraries are left out too. Names a doctest may
use without importing are read from the library's ``conftest.py`` (``doctest_namespace["nx"] =
networkx``), as pytest would provide them.
"""

from __future__ import annotations

import codecs
import importlib.util
import io
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from bench.pytest_config import DEFAULT_FLAGS, doctest_settings

# Tests hand a reader the expected behaviour; vendored copies of other libraries (pip's and
# setuptools' ``_vendor``) are not the library under audit, and would take most of its bugs.
SKIPPED_DIRS = {"tests", "test", "__pycache__", "_vendor", "vendor", "_vendored", "vendored"}
SKIPPED_DIRS |= {"externals", "_externals"}


class CorpusError(ValueError):
    """The source folder or package cannot be used as a corpus."""


# Files of a project folder that are not its library, when the library is a single module.
PROJECT_FILES = {"setup.py", "conftest.py", "noxfile.py", "fabfile.py", "tasks.py", "docs.py"}


@dataclass(frozen=True)
class Corpus:
    """Import root, the library's top (a package folder or ``name.py``, relative to the root)
    and the library's ``.py`` files."""

    root: Path
    package: str
    files: tuple[str, ...]
    doctest_globals: dict[str, str] = field(default_factory=dict)
    optionflags: int = DEFAULT_FLAGS

    @property
    def name(self) -> str:
        """The import name of the library: ``pkg`` for ``pkg/`` and for ``pkg.py``."""
        return self.package.removesuffix(".py")

    def top_paths(self) -> list[Path]:
        """Every path of the library as shipped: the module file, or the package's tree."""
        top = self.root / self.package
        return [top] if top.is_file() else sorted(top.rglob("*"))

    def module_name(self, relative: str) -> str:
        """``pkg/sub/mod.py`` -> ``pkg.sub.mod``; ``pkg/__init__.py`` -> ``pkg``."""
        parts = relative.removesuffix(".py").split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        return ".".join(parts)


def read_source(path: Path) -> str:
    """A Python file's text in its declared encoding (PEP 263: ``# -*- coding: latin-1 -*-``).

    A file that does not decode under its own declaration is read as UTF-8 with replacement
    characters: Python could not import it either, so it is only ever read, never run.
    """
    try:
        with tokenize.open(path) as handle:
            return handle.read()
    except (SyntaxError, UnicodeDecodeError):
        return path.read_bytes().decode("utf-8", "replace")


def encode_source(text: str, original: bytes) -> bytes:
    """``text`` in the encoding ``original`` declares (PEP 263; UTF-8 when it declares none), so
    an edited file is the original byte for byte outside the edit and imports as it did. A
    declaration Python refuses, or text it cannot encode, falls back to UTF-8: such a file never
    imported, so its examples never ran to prove anything."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(original).readline)
        return text.encode(encoding)
    except (SyntaxError, LookupError, UnicodeEncodeError):
        return text.encode("utf-8")


# PEP 263: a coding declaration is a comment on line 1 or 2 matching this.
_CODING = re.compile(r"^([ \t\f]*#.*?coding[:=][ \t]*)([-\w.]+)", re.ASCII)


def declaring_utf8(text: str) -> str:
    """``text`` with a coding declaration other than UTF-8 rewritten to ``utf-8``.

    Copies of a source are written as UTF-8 (the audit kit reads UTF-8); a ``latin-1`` line left
    in them would make Python decode those UTF-8 bytes as latin-1 when the copy is imported (as
    verification imports it), and every non-ASCII string would change. Lines are kept, so line
    numbers are too.
    """
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines[:2]):
        found = _CODING.match(line)
        if found is None:
            continue
        try:
            utf8 = codecs.lookup(found.group(2)).name == "utf-8"
        except LookupError:
            utf8 = False
        if not utf8:
            lines[index] = found.group(1) + "utf-8" + line[found.end() :]
        break
    return "".join(lines)


def is_utf8(path: Path) -> bool:
    """True when the file's bytes are UTF-8 (what the audit kit reads and edits are written in)."""
    try:
        path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def is_library_file(relative: str) -> bool:
    """True for a library ``.py`` file; False for tests and caches."""
    parts = relative.split("/")
    name = parts[-1]
    if not name.endswith(".py") or any(part in SKIPPED_DIRS for part in parts[:-1]):
        return False
    return not (name.startswith("test_") or name.endswith("_test.py"))


def load_dir(source: str | Path) -> Corpus:
    """A corpus from a folder or a file: a package folder, a module file, or an import root
    (or a project with a ``src/`` folder) holding one package or one module."""
    path = Path(source)
    if path.is_file() and path.suffix == ".py":
        return _from_module(path.resolve())
    if not path.is_dir():
        raise CorpusError(f"The source {str(source)!r} is not a folder or a .py file.")
    path = path.resolve()
    if (path / "__init__.py").is_file():
        return _from_package_dir(path)
    for root in (path, path / "src"):
        if not root.is_dir():
            continue
        packages = sorted(
            p
            for p in root.iterdir()
            if (p / "__init__.py").is_file() and p.name not in SKIPPED_DIRS
        )
        if len(packages) > 1:
            names = [p.name for p in packages]
            raise CorpusError(
                f"The source {str(source)!r} must be a package folder or hold exactly one "
                f"package; it holds {names!r}."
            )
        if packages:
            return _from_package_dir(packages[0])
        modules = sorted(
            p for p in root.glob("*.py") if is_library_file(p.name) and p.name not in PROJECT_FILES
        )
        if len(modules) == 1:
            return _from_module(modules[0])
        if modules:
            raise CorpusError(
                f"The source {str(source)!r} holds no package and several modules "
                f"{[p.name for p in modules]!r}; give the module file itself."
            )
    raise CorpusError(
        f"The source {str(source)!r} must be a package folder or hold exactly one package; "
        "it holds none (nor a src/ folder with one)."
    )


def load_package(name: str) -> Corpus:
    """A corpus from an installed package or module, located with ``importlib.util.find_spec``.

    Only top-level names are accepted: finding ``pkg.sub`` would import ``pkg``, and a
    subpackage alone cannot be imported from a private copy.
    """
    if not name.isidentifier():
        hint = f" (give the top-level package {name.split('.')[0]!r})" if "." in name else ""
        raise CorpusError(f"The package name {name!r} is not a top-level import name{hint}.")
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise CorpusError(f"No installed package named {name!r} was found.")
    if spec.submodule_search_locations:
        return _from_package_dir(Path(next(iter(spec.submodule_search_locations))).resolve())
    origin = Path(spec.origin or "")
    if origin.suffix != ".py" or not origin.is_file():
        raise CorpusError(
            f"The installed module {name!r} has no Python source to plant bugs in "
            f"(it is {spec.origin or 'built in'!s})."
        )
    return _from_module(origin.resolve())


def _from_module(module: Path) -> Corpus:
    """A single-module library: the module's folder is the import root."""
    root = module.parent
    places = [root.parent, root] if root.name == "src" else [root]
    globals_, flags = doctest_settings(places)
    return Corpus(root, module.name, (module.name,), globals_, flags)


def _from_package_dir(package_dir: Path) -> Corpus:
    root = package_dir.parent
    files = sorted(
        relative
        for p in package_dir.rglob("*.py")
        if is_library_file(relative := p.relative_to(root).as_posix())
    )
    if not files:
        raise CorpusError(f"The package folder {str(package_dir)!r} holds no Python file.")
    # A src/ layout keeps the project's pytest configuration above the import root.
    places = [root.parent] if root.name == "src" else []
    globals_, flags = doctest_settings([*places, root, package_dir])
    return Corpus(root, package_dir.name, tuple(files), globals_, flags)
