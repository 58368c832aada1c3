"""What the host refuses of a plan's process that no plan process of ours would ask.

The plan's process enforces the plan's rules; a compromised one skips them, so the host holds
the few that guard the host itself again: keywords a plan may not pass, requests outside any
call of the host's, and nesting past the plan's depth on one host thread (docs/SECURITY.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from planlang.errors import PlanLimitError
from planlang.isolation.codec import CodecError

__all__ = ["NO_SPARE", "Nesting", "no_underscore", "too_deep"]


def no_underscore(keywords: Any, what: str) -> None:
    """Refuse keywords a plan may not pass (the plan's wrapper refuses them in both modes)."""
    if type(keywords) is not dict or any(
        type(key) is not str or key.startswith("_") for key in keywords
    ):
        raise TypeError(f"{what} cannot take an argument whose name starts with '_'.")


class _NoSpare:
    """The host's pool for requests no waiting thread claims: none. Each request a plan
    process of ours sends is made within a call of the host's (the run, or a callback, whose
    thread waits for it); one outside any is a protocol break, so no host word runs that no
    thread of the run waits for (it could run on after the run had returned)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Any:
        raise CodecError("requests outside any call of the host's are not served")

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        pass


NO_SPARE = _NoSpare()


class Nesting(threading.local):
    """Per host thread: the requests of a run it serves, one within another (a host word
    that calls a plan function back, which calls a host word...). A class default: a thread
    that never served reads 0."""

    level = 0


def too_deep(depth: int) -> PlanLimitError:
    """A host thread serves requests nested past what a plan of ``depth`` makes: a host word
    for each level of plan calls, and the first (the plan's process stops a plan before)."""
    return PlanLimitError("depth", f"The plan nested function calls deeper than {depth}.")
