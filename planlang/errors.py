"""The errors of planlang, drawn once.

    PlanError                 anything wrong with a plan
    ├── PlanRefused           the check said no; carries every problem with line and column
    ├── PlanLimitError        a limit stopped it: steps, time, memory, depth or size
    └── PlanRuntimeError      the plan's own code failed; carries the plan's line

Every message is a full sentence. Plan code can never catch any of these: the language has no
``try``, so a limit that fires always ends the plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from planlang.check import Problem


class PlanError(Exception):
    """Base of every error a plan can cause."""

    def __init__(self, message: str, *, line: int | None = None, filename: str | None = None):
        self.message = message
        self.line = line
        self.filename = filename
        super().__init__(self._render())

    def _render(self) -> str:
        if self.line is None:
            return self.message
        where = f"{self.filename or 'plan'}:{self.line}"
        return f"{where}: {self.message}"


class PlanRefused(PlanError):
    """The check refused the plan. ``problems`` holds all of them, not only the first."""

    def __init__(self, problems: Sequence[Problem], *, filename: str | None = None):
        self.problems = tuple(problems)
        first = self.problems[0] if self.problems else None
        count = len(self.problems)
        summary = "; ".join(p.render() for p in self.problems[:5])
        more = f" (and {count - 5} more)" if count > 5 else ""
        super().__init__(
            f"The plan was refused with {count} problem{'s' if count != 1 else ''}: "
            f"{summary}{more}",
            line=None,
            filename=filename or (first.filename if first else None),
        )


class PlanLimitError(PlanError):
    """A limit of the sandbox ended the plan. ``kind`` names which one."""

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        line: int | None = None,
        filename: str | None = None,
    ):
        self.kind = kind
        super().__init__(message, line=line, filename=filename)


class PlanRuntimeError(PlanError):
    """The plan's own code raised; ``error_type`` is the name of the original exception."""

    def __init__(
        self,
        message: str,
        *,
        error_type: str = "Error",
        line: int | None = None,
        filename: str | None = None,
    ):
        self.error_type = error_type
        super().__init__(message, line=line, filename=filename)
