"""The answer ledger on a PostgreSQL server: one ledger for a team's runners and machines.

The contract is the SQLite ledger's, exactly: the same fingerprints and rows, an answer
committed before it is handed on (``put`` returns after the commit), the first answer for a
key wins, and a question being paid for anywhere is waited for. That last one is a claim row
with a lease (``planlang_claims``): taken before paying, dropped in the same statement that
stores the answer, renewed by a heartbeat while the call runs, and taken over by a waiter
once the lease has run out (its holder died).
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .answer_store import AnswerStore, compress
from .errors import RunCancelled
from .pg import Heartbeat, Server
from .reply import Reply
from .stores import StoreUnavailable

_COLUMNS = ("key", "model", "role", "sample", "prompt_tokens", "completion_tokens", "seconds",
            "credits", "created", "reply")  # fmt: skip
_PUT = (
    "WITH done AS (DELETE FROM planlang_claims WHERE key = %(key)s AND holder = %(holder)s) "
    "INSERT INTO planlang_answers VALUES (%(key)s, %(model)s, %(role)s, %(sample)s, "
    "%(prompt_tokens)s, %(completion_tokens)s, %(seconds)s, %(credits)s, %(created)s, "
    "%(reply)s) ON CONFLICT (key) DO NOTHING"
)


class PostgresLedger(AnswerStore):
    """``Ledger("postgresql://...")``: answers on a shared server, same methods and contract."""

    def __init__(self, path: str | Path, *, lease: float = 10.0, pool_size: int = 8,
                 timeout: float = 10.0) -> None:  # fmt: skip
        self.server = Server(str(path), max_size=pool_size, timeout=timeout)
        self.path = self.server.name  # the address with its password hidden
        self._held: set[str] = set()
        self._held_lock = threading.Lock()
        self._beat = Heartbeat(lease, self._renew)
        self._closed = False

    def __repr__(self) -> str:
        return f"Ledger({self.path!r})"

    def _renew(self, holder: str, lease: float) -> None:
        with self._held_lock:
            if not self._held:
                return
        with self.server.connection() as conn:
            conn.execute("UPDATE planlang_claims SET expires = now() + %s * interval '1 second' "
                         "WHERE holder = %s", (lease, holder))  # fmt: skip

    def _open(self) -> Server:
        if self._closed:
            raise ValueError(f"The ledger {self.path!r} is closed.")
        return self.server

    def get(self, key: str) -> Reply | None:
        with self._open().connection() as conn:
            row = conn.execute("SELECT reply FROM planlang_answers WHERE key = %s",
                               (key,)).fetchone()  # fmt: skip
        if row is None:
            return None
        return Reply.from_json(zlib.decompress(row[0]).decode("utf-8"))

    def put(self, key: str, reply: Reply) -> bool:
        """Store an answer (the first for a key wins) and drop our claim, in one statement."""
        row = {
            "key": key, "model": reply.model, "role": reply.role, "sample": reply.sample,
            "prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
            "seconds": reply.seconds, "credits": reply.credits or 0.0, "created": time.time(),
            "reply": compress(reply.to_json().encode("utf-8")), "holder": self._beat.holder,
        }  # fmt: skip
        with self._open().connection() as conn:
            stored = conn.execute(_PUT, row).rowcount == 1
        with self._held_lock:
            self._held.discard(key)
        return stored

    def claim(self, key: str, stop: Callable[[], bool] | None = None) -> Reply | None:
        """Wait while another runner pays for ``key``: its answer, or None once ours to pay.

        One call a look (``planlang_claim``): take the claim if it is free or its lease ran
        out, and read the answer in the same round trip. Looks from 5 ms up to 100 ms apart.
        """
        pause = 0.005
        while True:
            with self._open().connection() as conn:
                ask = (key, self._beat.holder, self._beat.lease)
                row = conn.execute("SELECT * FROM planlang_claim(%s, %s, %s)", ask).fetchone()
            taken, blob = row if row is not None else (False, None)
            if blob is not None:
                return Reply.from_json(zlib.decompress(blob).decode("utf-8"))
            if taken:
                with self._held_lock:
                    self._held.add(key)
                return None
            if stop is not None and stop():
                raise RunCancelled("The run was cancelled while another runner paid for it.")
            time.sleep(pause)
            pause = min(pause * 2, 0.1)

    def unclaim(self, key: str) -> None:
        with self._held_lock:
            if key not in self._held:
                return
            self._held.discard(key)
        try:
            with self.server.connection() as conn:
                conn.execute("DELETE FROM planlang_claims WHERE key = %s AND holder = %s",
                             (key, self._beat.holder))  # fmt: skip
        except StoreUnavailable:
            pass  # the lease runs out on its own; the run meets the outage elsewhere

    def __contains__(self, key: object) -> bool:
        with self._open().connection() as conn:
            row = conn.execute("SELECT 1 FROM planlang_answers WHERE key = %s", (key,)).fetchone()
        return row is not None

    def __len__(self) -> int:
        with self._open().connection() as conn:
            row = conn.execute("SELECT count(*) FROM planlang_answers").fetchone()
        return int(row[0]) if row else 0

    def keys(self) -> list[str]:
        with self._open().connection() as conn:
            rows = conn.execute("SELECT key FROM planlang_answers ORDER BY created").fetchall()
        return [row[0] for row in rows]

    def rows(self) -> Iterator[dict[str, Any]]:
        with self._open().connection() as conn:
            rows = conn.execute("SELECT " + ", ".join(_COLUMNS) + " FROM planlang_answers "
                                "ORDER BY created").fetchall()  # fmt: skip
        for row in rows:
            record = dict(zip(_COLUMNS, row, strict=True))
            record["reply"] = zlib.decompress(record["reply"]).decode("utf-8")
            yield record

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._beat.close()
        self.server.close()
