"""Path normalising and the one safe way for audit tools to open a corpus file.

Agents name files loosely (``./x``, ``/x``, ``.../audited/x``); scoring and reading must agree
that all of them mean ``x``. And the answer key of a benchmark lives next to the corpus under
``hidden/``: every reader of the kit goes through :func:`safe_path`, which refuses that folder
and anything outside the corpus root, so no tool can leak the key to a model.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

HIDDEN = "hidden"
AUDITED = "audited"


class PathRefused(ValueError):
    """A path an audit tool must not open (hidden, outside the corpus, or not a file)."""


def normalise(path: str) -> str:
    """Return ``path`` relative to the audited library root, in POSIX form.

    ``./x``, ``/x``, ``x`` and ``anything/audited/x`` all become ``x``. Parent steps are kept
    (``../x`` stays ``../x``) so that a reader can refuse them instead of guessing.

    >>> normalise("./algos/sort.py"), normalise("/algos/sort.py")
    ('algos/sort.py', 'algos/sort.py')
    >>> normalise("data/algos/audited/algos/sort.py")
    'algos/sort.py'
    """
    text = str(path)
    for _ in range(8):  # each pass can expose more to strip (" / /x"); stop when stable
        cleaned = _normalise_once(text)
        if cleaned == text:
            break
        text = cleaned
    return text


def _normalise_once(path: str) -> str:
    text = path.strip().replace("\\", "/")
    parts = text.split("/")
    if AUDITED in parts:
        # The last "audited" wins: ".../audited/x" means x inside the audited copy.
        last = len(parts) - 1 - parts[::-1].index(AUDITED)
        parts = parts[last + 1 :]
    text = "/".join(parts).lstrip("/")
    if not text:
        return ""
    cleaned = posixpath.normpath(text)
    return "" if cleaned == "." else cleaned


def is_hidden(relative: str) -> bool:
    """True when a normalised relative path lies in a ``hidden`` folder."""
    return HIDDEN in relative.split("/")


def safe_path(root: str | Path, path: str | Path) -> Path:
    """Resolve ``path`` inside the corpus ``root``, refusing hidden or escaping paths.

    Raises :class:`PathRefused` with a sentence that repeats the bad path.
    """
    base = Path(root).resolve()
    if is_hidden(normalise(str(root))) or HIDDEN in base.parts:
        raise PathRefused(f"The corpus root {str(root)!r} lies in a hidden folder; refused.")
    raw = str(path)
    candidate = Path(raw)
    if candidate.is_absolute() and _inside(candidate.resolve(), base):
        relative = candidate.resolve().relative_to(base).as_posix()
    else:
        relative = normalise(raw)
    if not relative:
        raise PathRefused(f"The path {raw!r} names no file.")
    if is_hidden(relative):
        raise PathRefused(f"The path {raw!r} is under hidden/; audit tools never open it.")
    resolved = (base / relative).resolve()
    if not _inside(resolved, base):
        raise PathRefused(f"The path {raw!r} lies outside the corpus root {str(root)!r}.")
    if HIDDEN in resolved.relative_to(base).parts:
        raise PathRefused(f"The path {raw!r} is under hidden/; audit tools never open it.")
    return resolved


def read_text(root: str | Path, path: str | Path) -> str:
    """Read a corpus file as text through :func:`safe_path`."""
    resolved = safe_path(root, path)
    if not resolved.is_file():
        raise PathRefused(f"The path {str(path)!r} is not a file of the corpus {str(root)!r}.")
    return resolved.read_text(encoding="utf-8")


def _inside(path: Path, base: Path) -> bool:
    return path == base or base in path.parents
