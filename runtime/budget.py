"""One budget for every worker of a run: reserve before a call, bill after it.

Workers reserve a call's price before sending (``admit``) and wait while the reservation
would pass the cap, so the cap holds even with many calls in flight. ``settle`` turns a
reservation into the credits actually billed (or releases it when the call failed), and
``raise_to`` wakes every waiting worker. Amounts are kept as integer nano-credits internally
so sums are exact: 25 calls at 0.2 fit a cap of 5.0, not 24.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass

from .errors import RunCancelled

_SCALE = 1_000_000_000


def _units(amount: float) -> int:
    if amount < 0:
        raise ValueError(f"A budget amount cannot be negative; got {amount}.")
    return round(amount * _SCALE)


@dataclass(frozen=True, slots=True)
class Reservation:
    """What ``admit`` hands back; pass it to ``settle`` exactly once."""

    id: int
    amount: float


class Budget:
    """A credit cap shared by threads. ``cap=None`` means unlimited."""

    def __init__(self, cap: float | None = None) -> None:
        self._cap = None if cap is None else _units(cap)
        self._spent = 0
        self._reserved = 0
        self._open: dict[int, int] = {}
        self._ids = itertools.count(1)
        self._waiting = 0
        # The plain lock is taken directly on the common path (a C-level ``with``); the
        # condition over the same lock is only for waiting at the cap.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._watchers: list[Callable[[float | None, float | None], None]] = []

    def __repr__(self) -> str:
        return f"Budget(cap={self.cap}, spent={self.spent}, reserved={self.reserved})"

    @property
    def cap(self) -> float | None:
        return None if self._cap is None else self._cap / _SCALE

    @property
    def spent(self) -> float:
        return self._spent / _SCALE

    @property
    def reserved(self) -> float:
        return self._reserved / _SCALE

    @property
    def paused(self) -> int:
        """How many workers are waiting at the cap right now."""
        return self._waiting

    def snapshot(self) -> tuple[float, float, float | None]:
        """(spent, reserved, cap) read together, under the lock."""
        with self._lock:
            return self.spent, self.reserved, self.cap

    def _fits(self, units: int) -> bool:
        return self._cap is None or self._spent + self._reserved + units <= self._cap

    def admit(
        self,
        cost: float,
        *,
        stop: Callable[[], bool] | None = None,
        on_wait: Callable[[], None] | None = None,
        on_resume: Callable[[], None] | None = None,
    ) -> Reservation:
        """Reserve ``cost``, waiting while it would pass the cap.

        ``stop`` is checked whenever the worker wakes; when it says True the wait ends with
        ``RunCancelled``. ``on_wait`` is called once if (and when) the worker has to wait, and
        ``on_resume`` once when that wait ends (admitted or stopped), so a run can record it.
        """
        units = _units(cost)
        with self._lock:
            if self._cap is not None and not self._fits(units):
                if on_wait is not None:
                    on_wait()
                self._waiting += 1
                try:
                    while not self._fits(units):
                        if stop is not None and stop():
                            raise RunCancelled("The run was cancelled while paused at the budget.")
                        self._cond.wait()
                finally:
                    self._waiting -= 1
                    if on_resume is not None:
                        on_resume()
            if stop is not None and stop():
                raise RunCancelled("The run was cancelled before the call was admitted.")
            self._reserved += units
            reservation = Reservation(next(self._ids), cost)
            self._open[reservation.id] = units
            return reservation

    def settle(self, reserved: Reservation, actual: float) -> None:
        """Bill ``actual`` credits against a reservation and release the rest.

        A failed call settles with 0. Settling one reservation twice is refused, so nothing is
        billed twice. ``actual`` may exceed the reservation (the provider's bill is the truth);
        the overrun is billed as is.
        """
        actual_units = _units(actual)
        with self._lock:
            units = self._open.pop(reserved.id, None)
            if units is None:
                raise ValueError(
                    f"Reservation {reserved.id} ({reserved.amount} credits) was already settled "
                    "or never admitted; nothing is billed twice."
                )
            self._reserved -= units
            self._spent += actual_units
            if self._waiting:  # only admit() waits on this condition, counted in _waiting
                self._cond.notify_all()

    def release(self, reserved: Reservation) -> None:
        """Give a reservation back unbilled (the call failed or never went out)."""
        self.settle(reserved, 0.0)

    def raise_to(self, cap: float | None) -> None:
        """Set a new cap (None: unlimited) and wake every waiting worker.

        The watchers are told first, so what they record of the raise comes before anything a
        woken worker records.
        """
        units = None if cap is None else _units(cap)
        with self._lock:
            watchers, old = list(self._watchers), self.cap
        for watcher in watchers:
            watcher(old, None if units is None else units / _SCALE)
        with self._cond:
            self._cap = units
            self._cond.notify_all()

    def watch(self, watcher: Callable[[float | None, float | None], None]) -> None:
        """Call ``watcher(old_cap, new_cap)`` at every ``raise_to``, before the cap changes."""
        with self._lock:
            self._watchers.append(watcher)

    def unwatch(self, watcher: Callable[[float | None, float | None], None]) -> None:
        with self._lock:
            if watcher in self._watchers:
                self._watchers.remove(watcher)

    def wake(self) -> None:
        """Wake waiting workers so they re-check their ``stop`` condition (used by cancel)."""
        with self._cond:
            self._cond.notify_all()

    def close(self) -> None:
        """Nothing to let go of here; a ``SharedBudget`` closes its connections."""
