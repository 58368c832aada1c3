"""runtime: the answer ledger, one front door to the models, one budget, crash-safe runs.

Stands on its own (it imports nothing from planlang)::

    ledger = Ledger("answers.db")
    llm = LLM(ledger, client=http_client(), budget=Budget(5.0))
    run = Run("forty workers", llm=llm, concurrency=10)
    run.start(lambda r: r.parallel([lambda i=i: r.agent(f"q {i}", schema=S) for i in range(40)]))
    run.wait()

See docs/RUNTIME.md.
"""

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
