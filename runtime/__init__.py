"""runtime: the answer ledger, one front door to the models, one budget, crash-safe runs.

Stands on its own (it imports nothing from planlang)::

    ledger = Ledger("answers.db")
    llm = LLM(ledger, client=http_client(), budget=Budget(5.0))
    run = Run("forty workers", llm=llm, concurrency=10)
    run.start(lambda r: r.parallel([lambda i=i: r.agent(f"q {i}", schema=S) for i in range(40)]))
    run.wait()

See docs/RUNTIME.md. Names load on first use (``__getattr__``), so a part of planlang that
needs one small module (``runtime.stacks`` in a plan's process) does not load the whole runtime.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .accounting import Accounting, Tally
    from .budget import Budget, Reservation
    from .errors import (
        CacheMiss,
        ClientError,
        FanOutDeadlock,
        OutcomeUnknown,
        RunCancelled,
        RunError,
        SpendRefused,
        ToolError,
        ToolUnavailable,
        WorkerFailed,
    )
    from .events import EventLog
    from .http import HTTPClient, http_client
    from .ledger import Ledger, fingerprint
    from .llm import LLM, Client
    from .records import WorkerRecord
    from .reply import Reply
    from .run import Run
    from .settings import Role, Settings
    from .stores import StoreUnavailable
    from .stream import Stream

_HOMES = {
    "Accounting": "accounting",
    "Tally": "accounting",
    "Budget": "budget",
    "Reservation": "budget",
    "CacheMiss": "errors",
    "ClientError": "errors",
    "FanOutDeadlock": "errors",
    "OutcomeUnknown": "errors",
    "RunCancelled": "errors",
    "RunError": "errors",
    "SpendRefused": "errors",
    "ToolError": "errors",
    "ToolUnavailable": "errors",
    "WorkerFailed": "errors",
    "EventLog": "events",
    "HTTPClient": "http",
    "http_client": "http",
    "Ledger": "ledger",
    "fingerprint": "ledger",
    "LLM": "llm",
    "Client": "llm",
    "WorkerRecord": "records",
    "Reply": "reply",
    "Run": "run",
    "Role": "settings",
    "Settings": "settings",
    "StoreUnavailable": "stores",
    "Stream": "stream",
}

__all__ = [
    "LLM",
    "Accounting",
    "Budget",
    "CacheMiss",
    "Client",
    "ClientError",
    "EventLog",
    "FanOutDeadlock",
    "HTTPClient",
    "Ledger",
    "OutcomeUnknown",
    "Reply",
    "Reservation",
    "Role",
    "Run",
    "RunCancelled",
    "RunError",
    "Settings",
    "SpendRefused",
    "StoreUnavailable",
    "Stream",
    "Tally",
    "ToolError",
    "ToolUnavailable",
    "WorkerFailed",
    "WorkerRecord",
    "fingerprint",
    "http_client",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"runtime.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
