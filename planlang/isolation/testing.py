"""Tests only: raw Python in a confined plan process, as if the language layer had failed.

A plan can never reach this: a probe is a field of the host's own ``run`` message, and a child
runs one only if its pool was made with ``probes=True``, which nothing but the tests does. The
probe runs after every layer is in place and the audit hook is strict, exactly where a plan
would run.
"""

from __future__ import annotations

from typing import Any

from planlang.isolation.pool import Pool
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits

__all__ = ["run_probe"]


def run_probe(pool: Pool, source: str, *, seconds: float = 20) -> Any:
    """Run ``source`` (raw Python) in a child of ``pool``; return its ``result``."""
    if not pool.probes:
        raise ValueError("run_probe needs a Pool(probes=True).")
    box = Sandbox(limits=Limits(seconds=seconds), isolation="process")
    box._pool = pool  # type: ignore[attr-defined]
    box._probe = {"probe": source}  # type: ignore[attr-defined]
    return box.run("result = None\n")
