"""One model answer, as every part of the runtime sees it.

A reply knows what it cost when it was bought (``credits``), and whether this particular call
paid for it: a ledger hit (``cached``) or a stand-in answer (``standin``) takes nothing from the
budget, so ``billed`` is zero for them while ``credits`` still says what the answer is worth.
That split is what lets a rehearsal report what a real run would have spent.
"""

from __future__ import annotations

import dataclasses
import json
import operator
from dataclasses import dataclass
from typing import Any

from .canonical import dumps


@dataclass(frozen=True, slots=True)
class Reply:
    text: str
    data: Any = None  # parsed JSON when the text is JSON, else None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    credits: float | None = None  # None: the client did not say; the front door fills the price
    cached: bool = False
    standin: bool = False
    model: str = ""
    role: str | None = None
    sample: int = 0

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
        return cls(**{k: v for k, v in fields.items() if k in _KNOWN})


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


_ALL = tuple(f.name for f in dataclasses.fields(Reply))
_KNOWN = frozenset(_ALL)
_STORED = tuple(f.name for f in dataclasses.fields(Reply) if f.name not in ("cached", "standin"))
# attrgetter of several names reads them all in C, returning a tuple: cheaper than getattr loops
_all_values = operator.attrgetter(*_ALL)
_stored_values = operator.attrgetter(*_STORED)
