"""A worker's whole conversation, kept so a person can see what each worker did and paid.

Workers (one ``Run.agent`` call each) are numbered in the order they ask to start. The record
holds every message sent and every reply received, status, times, cost and the error if any.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from .reply import Reply

STATUSES = ("running", "done", "failed", "refused", "cancelled")


@dataclass(slots=True)  # no per-record __dict__ for the garbage collector to walk
class WorkerRecord:
    id: int
    label: str | None
    role: str | None
    model: str
    phase: str
    prompt: str
    status: str = "running"
    messages: list[dict[str, Any]] = field(default_factory=list)
    replies: list[dict[str, Any]] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    finished: float | None = None
    turns: int = 0
    credits: float = 0.0  # billed by this worker's calls
    would_credits: float = 0.0  # what its stand-in calls would have cost
    error: str | None = None
    result: Any = None

    def add_reply(self, reply: Reply) -> None:
        self.turns += 1
        if reply.standin:
            self.would_credits += reply.credits or 0.0
        self.credits += reply.billed
        self.replies.append(
            {
                "text": reply.text,
                "cached": reply.cached,
                "standin": reply.standin,
                "credits": reply.credits,
                "billed": reply.billed,
                "seconds": reply.seconds,
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
            }
        )

    def finish(self, status: str, *, error: str | None = None, result: Any = None) -> None:
        if status not in STATUSES:  # a record's status is read by the CLI, the report and tests
            raise ValueError(f"status={status!r} is not one of {', '.join(STATUSES)}")
        self.status = status
        self.error = error
        self.result = result
        self.finished = time.time()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "label": self.label,
            "role": self.role,
            "model": self.model,
            "phase": self.phase,
            "prompt": self.prompt,
            "status": self.status,
            "messages": self.messages,
            "replies": self.replies,
            "started": self.started,
            "finished": self.finished,
            "turns": self.turns,
            "credits": self.credits,
            "would_credits": self.would_credits,
            "error": self.error,
            "result": self.result,
        }
