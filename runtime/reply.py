"""One model answer, as every part of the runtime sees it.

A reply knows what it cost when it was bought (``credits``), and whether this particular call
paid for it: a ledger hit (``cached``) or a stand-in answer (``standin``) takes nothing from the
budget, so ``billed`` is zero for them while ``credits`` still says what the answer is worth.
That split is what lets a rehearsal report what a real run would have spent.

The first six fields are the reference design's ``Reply(text, finish, prompt_tokens,
completion_tokens, seconds, model)``, in its order, so its positional form means the same here.
``finish`` is the server's ``finish_reason``: ``"length"`` says the answer was cut off at
``max_tokens``, which is not the same failure as a model that wrote bad JSON.
"""

from __future__ import annotations

import dataclasses
import json
import math
import operator
from dataclasses import dataclass
from typing import Any

from .canonical import dumps


@dataclass(frozen=True, slots=True)
class Reply:
    text: str
    finish: str | None = "stop"  # the server's finish_reason (stop, length, ...); None: unsaid
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    model: str = ""
    data: Any = None  # parsed JSON when the text is JSON, else None
    credits: float | None = None  # None: the client did not say; the front door fills the price
    cached: bool = False
    standin: bool = False
    role: str | None = None
    sample: int = 0

    @property
    def cut_off(self) -> bool:
        """True when the server stopped the answer at its length limit."""
        return self.finish == "length"

    @property
    def billed(self) -> float:
        """What this call took from the budget: nothing for ledger hits and stand-in answers."""
        if self.cached or self.standin:
            return 0.0
        return self.credits or 0.0

    def replace(self, **changes: Any) -> Reply:
        fields = dict(zip(_ALL, _all_values(self), strict=True))
        fields.update(changes)
        return Reply(**fields)

    def to_json(self) -> str:
        """Canonical JSON for the ledger (``cached`` and ``standin`` are per call, not stored)."""
        return dumps(dict(zip(_STORED, _stored_values(self), strict=True)))

    @classmethod
    def from_json(cls, text: str) -> Reply:
        fields = json.loads(text)
        fields.setdefault("finish", None)  # stored before the finish reason was kept: unknown
        return cls(**{k: v for k, v in fields.items() if k in _KNOWN})


def reply_problem(reply: Reply) -> str | None:
    """Why ``reply`` is not an answer the runtime can bill and store, or None if it is.

    A client is outside code: a reply whose fields have the wrong types (a model name where
    the credits go) must fail that one call, before the budget or the ledger sees it.
    """
    for name in ("text", "model"):
        if not isinstance(getattr(reply, name), str):
            return _wrong(reply, name, "a str")
    if reply.finish is not None and not isinstance(reply.finish, str):
        return _wrong(reply, "finish", "a str or None")
    for name in ("prompt_tokens", "completion_tokens", "sample"):
        value = getattr(reply, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            return _wrong(reply, name, "a non-negative int")
    if not _amount(reply.seconds):
        return _wrong(reply, "seconds", "a non-negative number")
    if reply.credits is not None and not _amount(reply.credits):
        return _wrong(reply, "credits", "a non-negative number or None")
    return None


def _amount(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def _wrong(reply: Reply, name: str, wanted: str) -> str:
    value = getattr(reply, name)
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    return f"its field {name} is {shown} ({type(value).__name__}), not {wanted}"


def parse_json_text(text: str) -> Any:
    """Parse a model's JSON answer, tolerating a Markdown code fence around it.

    Returns the parsed value or raises ``ValueError`` with a readable message.
    """
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        if body.rstrip().endswith("```"):
            body = body.rstrip()[:-3]
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        excerpt = text.strip()[:80]
        raise ValueError(f"The answer is not valid JSON ({exc.msg}): {excerpt!r}") from None
    except RecursionError:  # the parser recurses: arrays or objects nested past the stack
        raise ValueError("The answer nests too deeply to be read as JSON.") from None


_ALL = tuple(f.name for f in dataclasses.fields(Reply))
_KNOWN = frozenset(_ALL)
_STORED = tuple(f.name for f in dataclasses.fields(Reply) if f.name not in ("cached", "standin"))
# attrgetter of several names reads them all in C, returning a tuple: cheaper than getattr loops
_all_values = operator.attrgetter(*_ALL)
_stored_values = operator.attrgetter(*_STORED)
