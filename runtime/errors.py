"""The runtime's exceptions, split by who they stop.

Only four things may end a whole run: cancellation, a replay miss, refused spend and a shared
store failing. They share the base ``RunError`` so the run loop can tell them apart from a
single worker's trouble with one ``except``. Everything else (a failed call, an answer that
never validates) stays with the worker that met it.

    Exception
     ├── RunError            ends the run
     │    ├── CacheMiss      replay mode asked for an answer the ledger does not hold
     │    ├── SpendRefused   a call would cost money but there is no client to pay it
     │    ├── RunCancelled   the run was cancelled (by a person or by the runaway backstop)
     │    ├── OutcomeUnknown a tool call with an effect was in flight when a run stopped
     │    ├── ToolUnavailable a tool server stopped answering (runtime.tools)
     │    ├── FanOutDeadlock streams whose thunks take from each other: it could never end
     │    └── StoreUnavailable  a shared store (PostgreSQL) failed; in ``runtime.stores``
     ├── ClientError         one model call failed (transport, HTTP status, malformed body)
     ├── ToolError           a tool answered with an error: the plan's failure, at its line
     └── WorkerFailed        a worker gave up; its thread record says why
"""

from __future__ import annotations


class RunError(Exception):
    """An error that ends the whole run, not only the worker that met it."""


class CacheMiss(RunError):
    """Replay mode met a question whose answer is not in the ledger; nothing was sent."""

    def __init__(self, key: str, model: str) -> None:
        self.key = key
        self.model = model
        super().__init__(
            f"Replay mode has no stored answer for a call to model {model!r} "
            f"(fingerprint {key[:16]}...); nothing was sent."
        )


class SpendRefused(RunError):
    """A call needs paying but the front door has no client to pay with."""


class RunCancelled(RunError):
    """The run was cancelled; workers already talking finish, new ones are refused."""


class ClientError(Exception):
    """One model call failed. Messages never contain the API key."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        super().__init__(message)


class WorkerFailed(Exception):
    """A worker gave up (bad answers after repair, failed check, client error, refusal)."""

    def __init__(self, worker: int, reason: str) -> None:
        self.worker = worker
        self.reason = reason
        super().__init__(f"Worker {worker} failed: {reason}")


class OutcomeUnknown(RunError):
    """A tool call that may have had its effect was in flight when an earlier run stopped.

    Its tool does not promise ``idempotentHint``, so the rerun does not send it again.
    """

    def __init__(self, name: str, arguments: object, index: int) -> None:
        self.name = name
        self.arguments = arguments
        self.index = index
        super().__init__(
            f"The call {name}({arguments!r}) (identical call #{index}) was in flight when an "
            "earlier run stopped, and its tool does not say idempotentHint: whether it took "
            "effect is unknown, so it is not sent again. Check by hand, then clear it with "
            "runtime.tools.forget_in_flight(LEDGER) to let a rerun send it."
        )


class FanOutDeadlock(RunError):
    """A ``next()`` on a stream that could only wait for itself: the stream's own thunks take
    from it, directly or through other streams whose thunks it takes from.

    It is refused the moment the cycle closes, whatever the timing, rather than left to hang.
    It is the plan's mistake, so it ends the plan (planlang reports it at ``line``, the plan
    line of that ``next()``, which the host fills in when it knows it).
    """

    def __init__(self, message: str, line: int | None = None) -> None:
        self.line = line
        super().__init__(message)


class ToolUnavailable(RunError):
    """A tool server could not be reached or stopped answering; the message names it."""


class ToolError(Exception):
    """A tool answered a call with an error (or with a result that breaks its schema)."""
