"""The one front door to the models: every call a plan makes passes through ``LLM.chat``.

The order is the contract, because it decides what costs money:

1. ledger hit      -> the stored answer, free, marked ``cached``
2. replay mode     -> ``CacheMiss``; nothing is sent
3. stand-in        -> if one is set: its answer, free, leaves no trace in the ledger
4. no client       -> ``SpendRefused``
   (with a ledger: the same question in flight here or in another process is waited for)
5. budget admission (reserve the role's price; may wait at the cap)
6. the client      -> a failure releases the reservation: neither billed nor stored
   (a client with ``call_until`` is given the run's ``stop``: no retry starts once it is
   cancelled, and the call ends with ``RunCancelled``, released like a failure)
7. store in the ledger, then settle the actual credits
"""

from __future__ import annotations

import threading
from _thread import LockType, allocate_lock
from collections import Counter
from collections.abc import Callable
from typing import Any, Literal, Protocol

from .answer_store import AnswerStore
from .budget import Budget
from .errors import CacheMiss, ClientError, RunCancelled, SpendRefused
from .ledger import fingerprint
from .reply import Reply, reply_problem
from .settings import Settings

Mode = Literal["collect", "replay"]


class Client(Protocol):
    def __call__(self, model: str, messages: list[dict[str, Any]], **params: Any) -> Reply: ...


class LLM:
    """Ledger, budget, client and stand-in behind one ``chat`` method."""

    def __init__(
        self,
        ledger: AnswerStore | None = None,
        client: Client | None = None,
        budget: Budget | None = None,
        mode: Mode = "collect",
        standin: Client | None = None,
        settings: Settings | None = None,
    ) -> None:
        if mode not in ("collect", "replay"):
            raise ValueError(f"mode must be 'collect' or 'replay'; got {mode!r}.")
        self.settings = settings if settings is not None else Settings()
        self.ledger = ledger
        self.client = client
        self.budget = budget if budget is not None else Budget(self.settings.cap)
        self.mode: Mode = mode
        # A scripted free model (e.g. planlang's rehearsal stand-in). Set it to None to pay again.
        self.standin = standin
        self.stats: Counter[str] = Counter()  # hits, sent, standin, failed, refused
        self._lock = threading.Lock()
        # Questions being paid for right now: a second ask waits for the first's answer. Each
        # is a lock held until the first ask ends (cheaper to make than a threading.Event).
        self._inflight: dict[str, LockType] = {}

    def __repr__(self) -> str:
        return (
            f"LLM(mode={self.mode!r}, ledger={self.ledger!r}, client={self.client!r}, "
            f"budget={self.budget!r}, standin={'set' if self.standin else None})"
        )

    def _count(self, what: str) -> None:
        with self._lock:
            self.stats[what] += 1

    def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        role: str | None = None,
        model: str | None = None,
        sample: int = 0,
        stop: Callable[[], bool] | None = None,
        on_wait: Callable[[], None] | None = None,
        on_resume: Callable[[], None] | None = None,
        **params: Any,
    ) -> Reply:
        """Answer ``messages`` with the model of ``role`` (or ``model``), in the documented order.

        ``stop`` lets a run interrupt a wait at the budget; ``on_wait`` is told when the call
        starts waiting there and ``on_resume`` when that wait ends. Everything in ``params``
        goes to the client and into the key.
        """
        priced = self.settings.role(role)
        model_name = model or priced.model
        price = priced.price
        # A free stand-in answer with no ledger to look in needs no key (a third of its cost).
        free = self.ledger is None and self.mode == "collect" and self.standin is not None
        key = "" if free else fingerprint(model_name, messages, params, sample)

        if self.ledger is not None:
            stored = self.ledger.get(key)
            if stored is not None:
                self._count("hits")
                return stored.replace(cached=True, standin=False, role=role, sample=sample)

        if self.mode == "replay":
            self._count("refused")
            raise CacheMiss(key, model_name)

        if self.standin is not None:
            answer = self._call(self.standin, model_name, messages, params)
            self._count("standin")
            # credits: what this call would have cost a real run (the role's price per call).
            return answer.replace(
                standin=True,
                cached=False,
                credits=price,
                model=model_name,
                role=role,
                sample=sample,
            )

        if self.client is None:
            self._count("refused")
            raise SpendRefused(
                f"A call to model {model_name!r} is not in the ledger and there is no client "
                "to pay for it."
            )

        if self.ledger is not None:
            # The same question already on its way (same model, messages, params and sample):
            # wait for that answer rather than pay for it twice. If that call fails, ask again.
            with self._lock:
                running = self._inflight.get(key)
                if running is None:
                    gate = self._inflight[key] = allocate_lock()
                    gate.acquire()
            if running is not None:
                while not running.acquire(timeout=0.05):
                    if stop is not None and stop():
                        raise RunCancelled("The run was cancelled while a twin question ran.")
                running.release()  # open for the other twins too
                return self.chat(messages, role=role, model=model, sample=sample, stop=stop,
                                 on_wait=on_wait, on_resume=on_resume, **params)  # fmt: skip
        try:
            if self.ledger is not None:
                # ... and wait for a twin in flight in another process (or on another machine).
                stored = self.ledger.claim(key, stop)
                if stored is not None:
                    self._count("hits")
                    return stored.replace(cached=True, standin=False, role=role, sample=sample)
            return self._pay(key, model_name, messages, params, price, role, sample, stop,
                             on_wait, on_resume)  # fmt: skip
        finally:
            if self.ledger is not None:
                try:
                    self.ledger.unclaim(key)  # after the answer is committed (or the call failed)
                finally:
                    with self._lock:
                        self._inflight.pop(key).release()

    def _pay(
        self,
        key: str,
        model_name: str,
        messages: list[dict[str, Any]],
        params: dict[str, Any],
        price: float,
        role: str | None,
        sample: int,
        stop: Callable[[], bool] | None,
        on_wait: Callable[[], None] | None,
        on_resume: Callable[[], None] | None = None,
    ) -> Reply:
        """Budget admission, the client, then store and settle: the only place money goes."""
        reservation = self.budget.admit(price, stop=stop, on_wait=on_wait, on_resume=on_resume)
        try:
            answer = self._call(self.client, model_name, messages, params,  # type: ignore[arg-type]
                                stop)  # fmt: skip
        except BaseException:
            self.budget.release(reservation)
            self._count("failed")
            raise
        credits = answer.credits if answer.credits is not None else price
        answer = answer.replace(
            cached=False, standin=False, credits=credits, model=model_name, role=role, sample=sample
        )
        try:
            if self.ledger is not None:
                self.ledger.put(key, answer)
        finally:
            self.budget.settle(reservation, credits)
        self._count("sent")
        return answer

    @staticmethod
    def _call(
        client: Client,
        model: str,
        messages: list[dict[str, Any]],
        params: dict[str, Any],
        stop: Callable[[], bool] | None = None,
    ) -> Reply:
        """The client's answer. A client with ``call_until`` (``HTTPClient``) is given ``stop``,
        so a cancelled run starts no retry of the call (it ends with ``RunCancelled``)."""
        until = None if stop is None else getattr(client, "call_until", None)
        try:
            if until is None:
                answer = client(model, messages, **params)
            else:
                answer = until(stop, model, messages, **params)
        except (ClientError, RunCancelled):
            raise
        except Exception as exc:  # a buggy client must not end the run, only this call
            raise ClientError(f"The client failed: {type(exc).__name__}: {exc}") from exc
        if not isinstance(answer, Reply):
            raise ClientError(
                f"The client returned {type(answer).__name__}, not a Reply; it is not an answer."
            )
        problem = reply_problem(answer)
        if problem is not None:  # before the budget settles it or the ledger stores it
            raise ClientError(f"The client returned a malformed Reply: {problem}.")
        return answer
