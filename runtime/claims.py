"""Claims on questions being paid for, across the processes sharing one SQLite ledger.

A second process asking a question that is in flight elsewhere must wait for that answer, not
pay for it again. The claim is a lock on one byte of a side file (``answers.db-claims``), at
an offset taken from the fingerprint: the kernel lets go of it when its holder ends, however
it ends (SIGKILL included), and taking or dropping it writes nothing, so the ledger stays as
fast as before. Linux's open-file-description locks are used where there are any, so two
ledgers opened in one process exclude each other too; elsewhere, per-process ``lockf``.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import RunCancelled
from .reply import Reply

_OFD = hasattr(fcntl, "F_OFD_SETLK")
# The byte just past every fingerprint's (60 bits): held, waiting, while a ledger is set up.
_SETUP = 1 << 60


def offset(key: str) -> int:
    """Where a fingerprint's byte is: its first 60 bits (sha256 hex, so spread evenly)."""
    return int(key[:15], 16)


class FileClaims:
    """Non-blocking byte locks on one file, one per fingerprint held by this object."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        self._lock = threading.Lock()

    def _set(self, key: str, kind: int) -> bool:
        return self._set_at(offset(key), kind)

    def _set_at(self, start: int, kind: int) -> bool:
        try:
            if _OFD:
                # struct flock: l_type, l_whence, l_start, l_len, l_pid (0 for OFD locks)
                flock = struct.pack("hhqqi4x", kind, os.SEEK_SET, start, 1, 0)
                fcntl.fcntl(self._fd, fcntl.F_OFD_SETLK, flock)
            else:  # pragma: no cover - not Linux
                mode = fcntl.LOCK_UN if kind == fcntl.F_UNLCK else fcntl.LOCK_EX | fcntl.LOCK_NB
                fcntl.lockf(self._fd, mode, 1, start, os.SEEK_SET)
        except (BlockingIOError, PermissionError):
            return False
        return True

    @contextmanager
    def setting_up(self, timeout: float) -> Iterator[None]:
        """Hold the setup byte: one process at a time sets the ledger up.

        Two processes creating one SQLite file at once each read it, then ask to write
        (``journal_mode = WAL``, the schema); SQLite refuses one at once ("database is
        locked") rather than wait, since waiting could deadlock, whatever the busy timeout.
        The byte is waited for as SQLite waits, up to ``timeout`` seconds (a holder may be
        stopped, by Ctrl-Z or a debugger), then "database is locked" as SQLite says it.
        """
        deadline = time.monotonic() + timeout
        pause = 0.001
        while not self._set_at(_SETUP, fcntl.F_WRLCK):
            if time.monotonic() >= deadline:
                raise sqlite3.OperationalError("database is locked")
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
        try:
            yield
        finally:
            self._set_at(_SETUP, fcntl.F_UNLCK)

    def try_claim(self, key: str) -> bool:
        """Take the claim on ``key`` if no one else holds it."""
        with self._lock:
            return self._set(key, fcntl.F_WRLCK)

    def release(self, key: str) -> None:
        with self._lock:
            self._set(key, fcntl.F_UNLCK)

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


# Without OFD locks, closing any descriptor of a file lets go of every lock the process holds
# on it: a ledger's claims included. There, one FileClaims a path stays open for good.
_KEPT: dict[str, FileClaims] = {}
_KEPT_LOCK = threading.Lock()


@contextmanager
def setting_up(ledger_path: str, timeout: float) -> Iterator[None]:
    """Hold the setup of the SQLite ledger at ``ledger_path`` (for a table beside its answers,
    set up by another object): one setup at a time, across processes and within one."""
    path = ledger_path + "-claims"
    if not _OFD:  # pragma: no cover - not Linux
        with _KEPT_LOCK:
            claims = _KEPT.get(path) or _KEPT.setdefault(path, FileClaims(path))
        with claims.setting_up(timeout):
            yield
        return
    claims = FileClaims(path)
    try:
        with claims.setting_up(timeout):
            yield
    finally:
        claims.close()


def claim_or_answer(
    key: str,
    try_claim: Callable[[str], bool],
    get: Callable[[str], Reply | None],
    release: Callable[[str], None],
    stop: Callable[[], bool] | None,
) -> Reply | None:
    """Wait until this caller holds the claim on ``key`` (None) or its answer is stored.

    The answer is looked for again once the claim is held: the previous holder may have
    stored it just before letting go. Waiting polls, from 5 ms up to 100 ms between looks.
    """
    pause = 0.005
    while True:
        if try_claim(key):
            stored = get(key)
            if stored is None:
                return None
            release(key)
            return stored
        stored = get(key)
        if stored is not None:
            return stored
        if stop is not None and stop():
            raise RunCancelled("The run was cancelled while another runner paid for a question.")
        time.sleep(pause)
        pause = min(pause * 2, 0.1)
