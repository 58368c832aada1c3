"""What every answer ledger is, whatever holds it: the methods the front door uses, and the
stored form of an answer (its JSON, compressed). ``Ledger`` keeps answers in a SQLite file,
``PostgresLedger`` on a server; both are ``AnswerStore``s with the same contract.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from typing import Any

from .reply import Reply


def compress(data: bytes) -> bytes:
    """zlib at level 1; rows up to 16 KB with a smaller hash table (``memLevel`` 4).

    ``zlib.compress`` sets up (and zeroes) hash tables sized for large inputs: for a typical
    reply of a few hundred bytes that setup costs as much as everything else the ledger does
    (callgrind: 119k instructions a row against 62k). Measured on JSON text, memLevel 4
    compresses as well as the default at these sizes. The output is an ordinary zlib stream
    either way: ``zlib.decompress`` reads both.
    """
    if len(data) > _SMALL_ROW:
        return zlib.compress(data, 1)
    packer = zlib.compressobj(1, zlib.DEFLATED, zlib.MAX_WBITS, 4)
    return packer.compress(data) + packer.flush()


_SMALL_ROW = 16384


class AnswerStore:
    """The ledger's contract: ``put`` commits before it returns, the first answer for a key
    wins, and ``claim`` waits while the same question is being paid for elsewhere."""

    path: str

    def get(self, key: str) -> Reply | None:
        """The stored answer for ``key``, or None."""
        raise NotImplementedError

    def put(self, key: str, reply: Reply) -> bool:
        """Store an answer, committed on return; True when this call stored it."""
        raise NotImplementedError

    def claim(self, key: str, stop: Callable[[], bool] | None = None) -> Reply | None:
        """Wait while another process pays for ``key``: its answer, or None once ours to pay."""
        raise NotImplementedError

    def unclaim(self, key: str) -> None:
        """Let go of a claim (after the answer is committed, or the call failed)."""
        raise NotImplementedError

    def __contains__(self, key: object) -> bool:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def keys(self) -> list[str]:
        raise NotImplementedError

    def rows(self) -> Iterator[dict[str, Any]]:
        """Every row with its reply decompressed (for inspection, audits and copies)."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> AnswerStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
