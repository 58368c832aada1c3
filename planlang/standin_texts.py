"""The texts the stand-in writes: its words, a sample of each ``format`` it knows (and drawn
ones, for ``uniqueItems`` or a ``pattern`` beside the format), and plain guesses for a
pattern it cannot build from. Every one is checked by the schema's validator before a plan
sees it."""

from __future__ import annotations

import random
import string
import uuid
from typing import Any

from runtime.linear_regex import MatchTooCostly, search

__all__ = ["FORMATS", "WORDS", "drawn_format", "matches", "plain_guesses"]

WORDS = (
    "alpha bravo cache delta edge frame graph heap index join key loop merge node order path "
    "queue range shard token union value weight"
).split()
FORMATS = {
    "date": "2026-01-01",
    "date-time": "2026-01-01T00:00:00Z",
    "time": "00:00:00Z",
    "email": "worker@example.com",
    "uri": "https://example.com/a",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "hostname": "example.com",
    "ipv4": "127.0.0.1",
}


def plain_guesses(rng: random.Random, low: int, high: int) -> list[str]:
    """A few texts of ``low`` to ``high`` characters that patterns often take."""
    n = max(low, 1)
    pool = [
        "a" * n, "1" * n, "A" * n, "x1", "a_b", "abc-123", "a.py", "src/a.py", "v1.0.0",
        "".join(rng.choice(string.ascii_lowercase) for _ in range(n)),
    ]  # fmt: skip
    return [c for c in pool if low <= len(c) <= max(high, low)]


def matches(pattern: Any, text: str) -> bool:
    try:
        return bool(search(pattern, text))
    except (MatchTooCostly, ValueError, TypeError):
        return False


def drawn_format(fmt: str, rng: random.Random) -> str:
    """A drawn text of a format (its fixed sample is ``FORMATS``)."""
    day, hour, minute = rng.randint(1, 28), rng.randint(0, 23), rng.randint(0, 59)
    n, word = rng.randrange(10_000), rng.choice(WORDS)
    if fmt == "date":
        return f"2026-{rng.randint(1, 12):02d}-{day:02d}"
    if fmt == "date-time":
        fraction = f".{rng.randrange(10**6):06d}" if rng.random() < 0.5 else ""
        return f"2026-{rng.randint(1, 12):02d}-{day:02d}T{hour:02d}:{minute:02d}:00{fraction}Z"
    if fmt == "time":
        return f"{hour:02d}:{minute:02d}:{rng.randint(0, 59):02d}Z"
    if fmt == "email":
        return f"{word}{n}@example.com"
    if fmt == "uri":
        return f"https://example.com/{word}/{n}"
    if fmt == "uuid":
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    if fmt == "hostname":
        return f"{word}{n}.example.com"
    return f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(256)}"  # ipv4
