"""The errors of planlang, drawn once.

    PlanError                 anything wrong with a plan
    ├── PlanRefused           the check said no; carries every problem with line and column
    │   └── TamperedPlan      an approved plan whose source, code, policy or seal changed
    ├── PlanLimitError        a limit stopped it: steps, time, memory, depth or size
    └── PlanRuntimeError      the plan's own code failed; carries the plan's line

``Problem`` (one reason the check refuses a plan) lives here too, so that every module can name
the errors without importing the checker: this module imports nothing of the project.

Every message is a full sentence. Plan code can never catch any of these: the language has no
``try``, so a limit that fires always ends the plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One reason a plan is refused: where, a stable code, and why."""

    filename: str
    line: int
    col: int
    code: str
    message: str

    def render(self) -> str:
        return f"{self.filename}:{self.line}:{self.col}: {self.code} {self.message}"

    def as_dict(self) -> dict[str, object]:
        return {
            "filename": self.filename,
            "line": self.line,
            "col": self.col,
            "code": self.code,
            "message": self.message,
        }


_LETTER_VOWEL = frozenset("AEFHILMNORSX")  # letters whose names start with a vowel's sound
_YOU = ("uni", "use", "usu", "uti", "uu", "uint")  # a 'u' said as "you": a UserDict, a uint8


def a_kind(name: str, *, capital: bool = False) -> str:
    """``name`` (a type's) with its indefinite article, as it is said: "an object", "a list",
    "a UUID", "a UserDict"; an acronym by its first letter's name: "an RLock", "an HTTPError"
    ("An", "A")."""
    if name[:2].isupper() and name[:2].isalpha():  # an acronym: spelled out
        vowel = name[0] in _LETTER_VOWEL
    else:
        vowel = name[:1].lower() in tuple("aeiou") and not name.lower().startswith(_YOU)
    article = "an" if vowel else "a"
    return f"{article.capitalize() if capital else article} {name}"


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
        super().__init__(
            self._summary(), line=None, filename=filename or (first.filename if first else None)
        )

    def _summary(self) -> str:
        count = len(self.problems)
        if not count:
            return "The plan was refused."
        summary = "; ".join(p.render() for p in self.problems[:5])
        more = f" (and {count - 5} more)" if count > 5 else ""
        plural = "s" if count != 1 else ""
        return f"The plan was refused with {count} problem{plural}: {summary}{more}"


class TamperedPlan(PlanRefused):
    """An approved plan whose source, code, policy or seal no longer match."""

    def __init__(self, reason: str, *, headline: str = "The approved plan was tampered with"):
        self.reason, self.headline = reason, headline
        super().__init__(())

    def _summary(self) -> str:
        return f"{self.headline}: {self.reason}."


class OtherTerms(PlanRefused):
    """An approved plan handed a run whose settings would spend otherwise than was priced."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(())

    def _summary(self) -> str:
        return f"The approved plan was priced under other settings than this run's: {self.reason}."


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
