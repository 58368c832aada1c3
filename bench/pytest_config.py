"""What a project's pytest configuration tells its doctests: names and option flags.

A library's examples pass as shipped only when run the way its own test suite runs them, so
the names pytest's ``doctest_namespace`` provides (set in a ``conftest.py``:
``doctest_namespace["nx"] = networkx``) and the ``doctest_optionflags`` of ``pytest.ini``,
``pyproject.toml``, ``tox.ini`` or ``setup.cfg`` are read here, statically: nothing of the
project is imported or run. Installed packages ship none of these files; source checkouts do.
"""

from __future__ import annotations

import ast
import configparser
import doctest
import tomllib
from collections.abc import Iterable
from pathlib import Path

# Examples always run with these; a project's own flags are added, never taken away, so a
# corpus planted before its configuration was read proves the same bugs.
DEFAULT_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
_INI_SECTIONS = (("pytest.ini", "pytest"), ("tox.ini", "pytest"), ("setup.cfg", "tool:pytest"))


def doctest_settings(folders: Iterable[Path]) -> tuple[dict[str, str], int]:
    """Doctest names and option flags from the ``conftest.py`` and pytest configuration files
    of ``folders`` (outermost first: an inner conftest's names win)."""
    names: dict[str, str] = {}
    flags = DEFAULT_FLAGS
    for folder in dict.fromkeys(folders):
        names |= conftest_globals(folder / "conftest.py")
        flags |= _configured_flags(folder)
    return names, flags


def _configured_flags(folder: Path) -> int:
    """``doctest_optionflags`` names known to :mod:`doctest` (pytest's own ``NUMBER`` and
    ``ALLOW_*`` are not, and are left out), or 0 without a configuration."""
    words: list[str] = []
    try:
        data = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))
        value = data.get("tool", {}).get("pytest", {}).get("ini_options", {})
        option = value.get("doctest_optionflags", []) if isinstance(value, dict) else []
        words += option.split() if isinstance(option, str) else [str(w) for w in option]
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        pass
    for name, section in _INI_SECTIONS:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(folder / name, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            continue
        words += parser.get(section, "doctest_optionflags", fallback="").split()
    flags = 0
    for word in words:
        flags |= doctest.OPTIONFLAGS_BY_NAME.get(word.strip(), 0)
    return flags


def conftest_globals(conftest: Path) -> dict[str, str]:
    """Names put in pytest's ``doctest_namespace``, mapped to the module they stand for."""
    try:
        tree = ast.parse(conftest.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return {}  # no conftest, or one that pytest could not load either
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
