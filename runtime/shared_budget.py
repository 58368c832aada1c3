"""A named budget on a PostgreSQL server: one cap for every runner of a team at once.

The contract is ``Budget``'s (reserve before a call, bill after it, wait at the cap, never bill
twice), held across processes and machines: the cap and what was spent are one row
(``planlang_budgets``), each reservation is a row with a lease (``planlang_reservations``)
that this runner's heartbeat renews. A runner that dies stops renewing, and its reservations
stop counting once their lease has run out. An admission locks the budget's row, so spent
plus live reservations never passes the cap, whatever the number of runners. A runner waiting
at the cap looks again every ``poll`` seconds (a quarter second by default), so a raise made
anywhere is seen within a second.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .budget import _SCALE, Budget, Reservation, _units
from .errors import RunCancelled
from .pg import Heartbeat, Server

_KEEP: Any = object()  # open the budget with whatever cap it has

_LIVE = (
    "SELECT coalesce(sum(units), 0) FROM planlang_reservations "
    "WHERE budget = %s AND expires > now()"
)
_RENEW = (
    "UPDATE planlang_reservations SET expires = now() + %s * interval '1 second' "
    "WHERE holder = %s AND expires > now()"
)
_READ = f"SELECT cap, spent, ({_LIVE}) FROM planlang_budgets WHERE name = %s"
_SETTLE = (
    "WITH gone AS (DELETE FROM planlang_reservations WHERE id = %s) "
    "UPDATE planlang_budgets SET spent = spent + %s WHERE name = %s"
)


class SharedBudget(Budget):
    """``Budget`` over a server: ``SharedBudget("postgresql://...", "team", cap=50.0)``.

    A subclass only so it goes wherever a ``Budget`` does: every method is its own.
    """

    def __init__(
        self,
        location: str,
        name: str = "default",
        *,
        cap: float | None = _KEEP,
        lease: float = 10.0,
        poll: float = 0.25,
        timeout: float = 10.0,
    ) -> None:
        self.name = name
        self._watchers: list[Callable[[float | None, float | None], None]] = []  # Budget.watch
        self.server = Server(location, max_size=4, timeout=timeout)
        self.poll = poll
        self._open: dict[int, int] = {}
        self._waiting = 0
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        with self.server.connection() as conn:
            conn.execute("INSERT INTO planlang_budgets (name, cap) VALUES (%s, %s) "
                         "ON CONFLICT (name) DO NOTHING",
                         (name, None if cap is _KEEP or cap is None else _units(cap)))  # fmt: skip
        if cap is not _KEEP:
            self.raise_to(cap)
        self._beat = Heartbeat(lease, self._renew)

    def __repr__(self) -> str:
        return f"SharedBudget({self.server.name!r}, {self.name!r})"

    def _renew(self, holder: str, lease: float) -> None:
        with self._lock:
            if not self._open:
                return
        with self.server.connection() as conn:  # a lapsed reservation stays lapsed: its room
            conn.execute(_RENEW, (lease, holder))  # may have gone to another runner since

    def _row(self) -> tuple[int | None, int, int]:
        """Cap, spent and live reservations in one statement: one snapshot of the server, so a
        raise and a reservation committed meanwhile are seen both or neither (autocommit gives
        each statement its own snapshot)."""
        with self.server.connection() as conn:
            row = conn.execute(_READ, (self.name, self.name)).fetchone()
        assert row is not None, f"the budget {self.name!r} vanished from {self.server.name}"
        return row[0], int(row[1]), int(row[2])

    @property
    def cap(self) -> float | None:
        cap = self._row()[0]
        return None if cap is None else cap / _SCALE

    @property
    def spent(self) -> float:
        return self._row()[1] / _SCALE

    @property
    def reserved(self) -> float:
        return self._row()[2] / _SCALE

    @property
    def paused(self) -> int:
        """How many of this process's workers wait at the cap right now."""
        return self._waiting

    def snapshot(self) -> tuple[float, float, float | None]:
        """(spent, reserved, cap) of the whole team, read together."""
        cap, spent, reserved = self._row()
        return spent / _SCALE, reserved / _SCALE, None if cap is None else cap / _SCALE

    def _try_reserve(self, units: int) -> int | None:
        """Lock the budget's row, count live reservations, add ours if it fits (one call)."""
        with self.server.connection() as conn:
            row = conn.execute("SELECT planlang_reserve(%s, %s, %s, %s)",
                               (self.name, self._beat.holder, units,
                                self._beat.lease)).fetchone()  # fmt: skip
        return None if row is None or row[0] is None else int(row[0])

    def admit(self, cost: float, *, stop: Callable[[], bool] | None = None,
              on_wait: Callable[[], None] | None = None,
              on_resume: Callable[[], None] | None = None) -> Reservation:  # fmt: skip
        """Reserve ``cost`` against the team's cap, waiting while it would pass it."""
        units = _units(cost)
        if stop is not None and stop():
            raise RunCancelled("The run was cancelled before the call was admitted.")
        made = self._try_reserve(units)
        if made is None:
            if on_wait is not None:
                on_wait()
            with self._lock:
                self._waiting += 1
            try:
                while made is None:
                    if stop is not None and stop():
                        raise RunCancelled("The run was cancelled while paused at the budget.")
                    with self._cond:
                        self._cond.wait(self.poll)
                    made = self._try_reserve(units)
            finally:
                with self._lock:
                    self._waiting -= 1
                if on_resume is not None:
                    on_resume()
        with self._lock:
            self._open[made] = units
        return Reservation(made, cost)

    def settle(self, reserved: Reservation, actual: float) -> None:
        """Bill ``actual`` and drop the reservation, in one statement; twice is refused."""
        actual_units = _units(actual)
        with self._lock:
            if self._open.pop(reserved.id, None) is None:
                raise ValueError(
                    f"Reservation {reserved.id} ({reserved.amount} credits) was already settled "
                    "or never admitted; nothing is billed twice."
                )
        with self.server.connection() as conn:
            conn.execute(_SETTLE, (reserved.id, actual_units, self.name))
        self.wake()

    def release(self, reserved: Reservation) -> None:
        self.settle(reserved, 0.0)

    def raise_to(self, cap: float | None) -> None:
        """Set the team's cap (None: unlimited); waiting runners everywhere see it next look."""
        units = None if cap is None else _units(cap)
        with self._lock:
            watchers = list(self._watchers)
        old = self.cap if watchers else None
        for watcher in watchers:  # this process's runs record the raise first (Budget.watch)
            watcher(old, None if units is None else units / _SCALE)
        with self.server.connection() as conn:
            conn.execute("UPDATE planlang_budgets SET cap = %s WHERE name = %s",
                         (units, self.name))  # fmt: skip
        self.wake()

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def close(self) -> None:
        self._beat.close()
        self.server.close()
