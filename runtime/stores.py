"""Where a store lives: a file path (SQLite) or a ``postgresql://`` address (a shared server).

A location with a scheme planlang does not know is an error, never a file path: before this,
``Ledger("postgresql://...")`` quietly made a SQLite file in a folder named ``postgresql:``.
Addresses are shown with their password replaced, so an error can name the store safely.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from .errors import RunError

POSTGRES_SCHEMES = ("postgresql", "postgres")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):(//)?")

Backend = Literal["sqlite", "postgresql"]


class StoreUnavailable(RunError):
    """The shared store cannot be reached or failed mid-way; the run ends, nothing half written."""


def backend(location: str | Path) -> Backend:
    """``"postgresql"`` for a server address, ``"sqlite"`` for a path; anything else is refused."""
    if isinstance(location, Path):
        return "sqlite"
    match = _SCHEME.match(location)
    if match is None:
        return "sqlite"
    scheme, slashes = match.group(1).lower(), match.group(2)
    if scheme in POSTGRES_SCHEMES and slashes:
        return "postgresql"
    if not slashes and scheme not in POSTGRES_SCHEMES:
        return "sqlite"  # "C:\\x.db" or "answers:v2.db" is a file name, not an address
    raise ValueError(
        f"Unknown store location {redact(location)!r}: planlang knows postgresql://... "
        "addresses and plain file paths (SQLite)."
    )


def redact(location: str | Path) -> str:
    """The location with any password replaced by ``***``, fit for messages and logs."""
    text = str(location)
    if "://" not in text:
        return text
    parts = urlsplit(text)
    if parts.password is None:
        return re.sub(r"(password=)[^\s&]+", r"\1***", text)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    netloc = f"{parts.username or ''}:***@{host}"
    query = re.sub(r"(password=)[^\s&]+", r"\1***", parts.query)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
