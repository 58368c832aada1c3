"""The tests' PostgreSQL server (``runtime.pg_cluster``): without the binaries the tests fail
under CI (``CI=true``) and are skipped with the reason otherwise.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.pg_cluster import Cluster, bin_dir

__all__ = ["Cluster", "require_binaries"]


def require_binaries() -> Path:
    found = bin_dir()
    if found is None:
        reason = ("PostgreSQL binaries (initdb, pg_ctl) not found: apt-get install postgresql, "
                  "or set PLANLANG_PG_BIN")  # fmt: skip
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    try:
        import psycopg  # noqa: F401
    except ImportError:
        reason = "psycopg is not installed: pip install -e '.[postgres]'"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return found
