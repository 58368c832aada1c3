"""What a run remembers, in order: its event stream.

Events are plain dicts with a sequence number and seconds since the run started, kept in
memory and, when a path is given, appended as JSON lines (line-buffered, so a killed run still
leaves every event it emitted). What the calls cost is ``runtime.accounting``'s.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import IO, Any

_monotonic_ns = time.monotonic_ns


class EventLog:
    """An ordered, thread-safe event stream, optionally mirrored to a JSON-lines file."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.events: list[dict[str, Any]] = []
        self.path = None if path is None else Path(path)
        self._lock = threading.Lock()
        self._t0 = time.monotonic_ns()
        self._file: IO[str] | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # a plan's lone surrogate, which UTF-8 cannot hold, is written \ud800: JSON's escape
            self._file = self.path.open("a", encoding="utf-8", buffering=1,
                                        errors="backslashreplace")  # fmt: skip

    def emit(self, kind: str, **fields: Any) -> dict[str, Any]:
        with self._lock:
            event = {
                "seq": len(self.events) + 1,
                # whole microseconds, in integers: round(x, 6) costs twice as much per event
                "t": (_monotonic_ns() - self._t0) // 1000 / 1e6,
                "kind": kind,
                **fields,
            }
            self.events.append(event)
            if self._file is not None:
                self._file.write(json.dumps(event, ensure_ascii=False, default=str) + "\n")
            return event

    def t_of(self, monotonic_ns: int) -> float:
        """A ``time.monotonic_ns()`` reading in this log's ``t`` (seconds since it began)."""
        return (monotonic_ns - self._t0) // 1000 / 1e6

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
