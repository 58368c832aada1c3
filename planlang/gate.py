"""The gate: the only way from plan source to execution.

``Gate(policy).submit(source)`` checks and prices the plan, then approves it under the policy or
holds it for a person, with the reasons. Decisions are stored with their price
(``planlang.gate_store``: a SQLite file or a PostgreSQL server), each sealed with a key kept
outside the store (``planlang.gate_seal``), and ``approve(id)`` lets a held one go. What the
gate hands on is an ``ApprovedPlan``: the code compiled from exactly the source that was
checked and priced, sealed with an HMAC over the source's sha256, the compiled code object,
the policy and the price. Any change (one character of the source, another code object,
another policy) breaks the seal, and a broken or foreign seal is refused at run. The code is
sealed by identity, and ``check`` vouches that it compiled that very object from that source:
its bytes (``marshal``) are no fingerprint, since they depend on reference counts.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from planlang.binding import HostProvider, plan_sandbox, run_host_words, run_plan
from planlang.check import CheckResult, check, checked_source, is_checked_code, source_sha256
from planlang.errors import PlanRefused, TamperedPlan, a_kind
from planlang.gate_seal import default_key_path, load_key, seal_decision, seal_holds
from planlang.gate_store import open_store
from planlang.gate_terms import PRICED_SETTINGS, same_spending, write_bound
from planlang.gate_terms import terms_sha as _terms_sha
from planlang.price import PriceReport, price
from planlang.sandbox.limits import Limits
from runtime import Run
from runtime.tools import tool_door

__all__ = ["PRICED_SETTINGS", "RUN_LIMITS", "ApprovedPlan", "Decision", "Gate", "Policy",
           "TamperedPlan", "execute"]  # fmt: skip

# A real run waits on real models: the wall-time limit is the run's, not a rehearsal's.
RUN_LIMITS = Limits(seconds=24 * 3600)


class Policy(BaseModel):
    """When the gate may let a plan go without a person. ``None`` means no limit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_ceiling: float | None = Field(default=None, ge=0)
    max_median: float | None = Field(default=None, ge=0)
    max_credits: float | None = Field(default=None, ge=0)
    max_wall_seconds: float | None = Field(default=None, ge=0)
    allow_problems: bool = False
    # MCP tools (docs/MCP.md): calls of tools not marked readOnlyHint; any destructiveHint call.
    max_tool_writes: int | None = Field(default=None, ge=0)
    hold_destructive: bool = False

    def sha256(self) -> str:
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()

    def reasons_to_hold(self, report: PriceReport) -> list[str]:
        """Every reason this price is not within the policy (empty: approve)."""
        reasons = []
        total = report.total["credits"]
        if self.max_ceiling is not None and report.ceiling > self.max_ceiling:
            reasons.append(f"hard ceiling {report.ceiling:g} is over {self.max_ceiling:g}")
        if self.max_median is not None and total.median > self.max_median:
            reasons.append(f"median credits {total.median:g} are over {self.max_median:g}")
        if self.max_credits is not None and total.max > self.max_credits:
            reasons.append(f"the dearest rehearsal, {total.max:g} credits, is over "
                           f"{self.max_credits:g}")  # fmt: skip
        wall = report.wall_seconds.median
        if self.max_wall_seconds is not None and wall > self.max_wall_seconds:
            reasons.append(f"estimated wall time {wall:g} s is over {self.max_wall_seconds:g} s")
        if report.problems and not self.allow_problems:
            reasons.append(f"{len(report.problems)} problem(s) met in rehearsal")
        writes = report.tool_writes()
        if self.max_tool_writes is not None and writes > self.max_tool_writes:
            reasons.append(f"{writes} calls of tools that are not read-only are over "
                           f"{self.max_tool_writes}")  # fmt: skip
        unrehearsed = report.unrehearsed_writes()
        if self.max_tool_writes is not None and unrehearsed:
            reasons.append(
                f"it names tools that are not read-only which no rehearsal called "
                f"(how often a run calls them is not known): {', '.join(unrehearsed)}"
            )
        if self.hold_destructive and report.destructive_tools():
            reasons.append(f"it can call destructive tools: "
                           f"{', '.join(report.destructive_tools())}")  # fmt: skip
        return reasons


def _price_sha(report: PriceReport) -> str:
    body = json.dumps(report.to_dict(), sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()


def _price_sha_of_json(text: str) -> str:
    """``_price_sha`` of a stored report (it was stored as ``json.dumps(report.to_dict())``)."""
    body = json.dumps(json.loads(text), sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()


def _code_id(code: Any) -> str:
    """The code object itself, for the seal (``verify`` checks what ``check`` compiled it from):
    a living object's id is unique, and the plan keeps its code alive."""
    return f"code@{id(code):x}"


@dataclass(frozen=True)
class ApprovedPlan:
    """A plan the gate let go. Call it with a ``runtime.Run`` to run it (see ``execute``)."""

    id: int
    source: str
    sha256: str
    policy_sha256: str
    price_sha256: str
    check_result: CheckResult = field(repr=False)
    seal: str = field(repr=False)
    gate: Gate = field(repr=False, compare=False)
    # calls of tools that are not read-only its run may send (``_write_bound``); None: no bound
    max_writes: int | None = field(default=None, compare=False)

    @property
    def filename(self) -> str:
        return self.check_result.filename

    @property
    def code(self) -> Any:
        return self.check_result.code

    def verify(self) -> None:
        """Raise ``TamperedPlan`` unless source, code, policy, price and seal all match."""
        if not isinstance(self.gate, Gate):
            raise TamperedPlan("it was not issued by a gate")
        if source_sha256(self.source) != self.sha256:
            raise TamperedPlan("its source is not the source that was approved")
        if self.check_result.sha256 != self.sha256 or not self.check_result.ok:
            raise TamperedPlan("its checked code belongs to another source")
        if not is_checked_code(self.check_result.code):
            raise TamperedPlan("its code was not compiled by planlang.check")
        if checked_source(self.check_result.code) != self.sha256:
            raise TamperedPlan("its code was compiled from another source")
        expected = self.gate._seal(self.sha256, self.check_result.code, self.policy_sha256,
                                   self.price_sha256)  # fmt: skip
        if not hmac.compare_digest(expected, self.seal):
            raise TamperedPlan("its seal does not match its source, code, policy and price")
        if self.policy_sha256 != self.gate.terms_sha256():
            raise TamperedPlan("it was approved under another policy, or priced under other "
                               "settings or inputs")  # fmt: skip

    def __call__(self, run: Run) -> Any:
        """Run on ``run`` (a ``runtime.Run``): the runtime sees a plain callable."""
        return execute(self, run)


def execute(plan: ApprovedPlan, run: Run, *, limits: Limits | None = None) -> Any:
    """Verify ``plan`` and run it on ``run``; returns the plan's ``result``.

    The runtime takes plans as callables and never imports planlang; an ``ApprovedPlan`` is such
    a callable, and it verifies its seal before a single line runs. Source strings and bare code
    objects are not callables, so they cannot be run at all.
    """
    if not isinstance(plan, ApprovedPlan):
        raise TamperedPlan(f"{a_kind(type(plan).__name__)} is not an approved plan")
    plan.verify()
    gate = plan.gate
    same_spending(gate.settings, run)
    if plan.max_writes is not None:  # the bound holds for the run, not only its rehearsals
        tool_door(run).max_writes = plan.max_writes  # (review 24)
    words, _origins = run_host_words(run, plan.filename)
    box = plan_sandbox(run, words, host=gate.host, inputs=gate.inputs, limits=limits or RUN_LIMITS,
                       isolation=gate.isolation)  # fmt: skip
    return run_plan(box, plan.check_result)


@dataclass(frozen=True)
class Decision:
    """The gate's verdict on one submission."""

    id: int
    status: str  # "approved" or "held"
    reasons: tuple[str, ...]
    price: PriceReport
    plan: ApprovedPlan | None = None

    @property
    def approved(self) -> bool:
        return self.status == "approved"


class Gate:
    """Approves plans under a policy or holds them for a person."""

    def __init__(
        self,
        policy: Policy | Mapping[str, Any] | None = None,
        *,
        store: str | Path = ":memory:",
        key_file: str | Path | None = None,
        settings: Any = None,
        host: HostProvider | Mapping[str, Any] | None = None,
        inputs: Any = None,
        seeds: int = 5,
        latency: float = 2.0,
        isolation: str | None = None,
    ):
        self.policy = policy if isinstance(policy, Policy) else Policy(**(policy or {}))
        self.settings = settings
        self.host = host
        self.inputs = inputs
        self.seeds = seeds
        self.latency = latency
        # process isolation unless the embedder (or [planlang] isolation) says "inprocess"
        self.isolation = isolation or getattr(settings, "isolation", None)
        self._key = secrets.token_bytes(32)  # seals are good only in this process
        # Stored decisions are sealed with a key from a file outside the store (gate_seal):
        # a store only this process sees (":memory:") needs none.
        in_memory = str(store) == ":memory:" and key_file is None
        self._decision_key = secrets.token_bytes(32) if in_memory else load_key(
            key_file if key_file is not None else default_key_path())  # fmt: skip
        self.store = open_store(store)

    def close(self) -> None:
        self.store.close()

    def terms_sha256(self) -> str:
        """The policy, settings and inputs this gate prices and decides under (``_terms_sha``):
        a decision is stored, found and issued under these, never under others."""
        return _terms_sha(self.policy, self.settings, self.inputs)

    def _decision_seal(self, sha: str, policy_sha: str, price_sha: str, status: str) -> str:
        return seal_decision(self._decision_key, sha, policy_sha, price_sha, status)

    def _seal(self, sha: str, code: Any, policy_sha: str, price_sha: str) -> str:
        message = "|".join((sha, _code_id(code), policy_sha, price_sha)).encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    # -- submitting ----------------------------------------------------------------------

    def submit(self, source: str, filename: str = "plan.py") -> Decision:
        """Check, price and decide. Raises ``PlanRefused`` when the check says no."""
        checked = check(source, filename)
        if not checked.ok:
            raise PlanRefused(checked.problems, filename=filename)
        report = price(checked, seeds=self.seeds, settings=self.settings, host=self.host,
                       inputs=self.inputs, latency=self.latency,
                       isolation=self.isolation)  # fmt: skip
        reasons = self.policy.reasons_to_hold(report)
        status = "held" if reasons else "approved"
        plan_id = self._store(checked, source, report, status, reasons)
        plan = (
            self._issue(plan_id, source, checked, _price_sha(report), report.to_dict())
            if not reasons
            else None
        )
        return Decision(plan_id, status, tuple(reasons), report, plan)

    def _store(
        self, checked: CheckResult, source: str, report: PriceReport, status: str,
        reasons: list[str],
    ) -> int:  # fmt: skip
        now = time.time()
        policy_sha, price_sha = self.terms_sha256(), _price_sha(report)
        if status == "held":  # a plan is held once per sha256 (and policy), however often run
            already = self.store.held_for(checked.sha256, policy_sha)
            if already is not None:
                return already
        return self.store.insert({
            "sha256": checked.sha256, "filename": checked.filename, "source": source,
            "policy_sha256": policy_sha, "price_json": json.dumps(report.to_dict(), default=str),
            "price_sha256": price_sha, "status": status, "reasons_json": json.dumps(reasons),
            "submitted": now, "decided": now if status == "approved" else None,
            "decided_by": "policy" if status == "approved" else None,
            "seal": self._decision_seal(checked.sha256, policy_sha, price_sha, status),
        })  # fmt: skip

    def _issue(
        self, plan_id: int, source: str, checked: CheckResult, price_sha: str,
        priced: dict[str, Any],
    ) -> ApprovedPlan:  # fmt: skip
        policy_sha = self.terms_sha256()
        seal = self._seal(checked.sha256, checked.code, policy_sha, price_sha)
        return ApprovedPlan(plan_id, source, checked.sha256, policy_sha, price_sha, checked,
                            seal, self, write_bound(self.policy, priced))  # fmt: skip

    # -- people ----------------------------------------------------------------------------

    def held(self) -> list[dict[str, Any]]:
        """Plans waiting for a person, oldest first, with the price and problems that held them."""
        return [self.summary(int(r["id"])) for r in self.store.held()]

    def summary(self, plan_id: int) -> dict[str, Any]:
        """One plan as a person reviews it: status, reasons, price and rehearsal problems."""
        row = self._row(plan_id)
        report = json.loads(row["price_json"])
        status, by = row["status"], row["decided_by"]
        if status == "rejected":
            by = row["rejected_by"]
        credits = report.get("total", {}).get("credits", {})
        return {
            "id": row["id"], "filename": row["filename"], "sha256": row["sha256"],
            "status": status, "reasons": json.loads(row["reasons_json"]),
            "submitted": row["submitted"], "decided_by": by,
            "price": {"credits": credits, "ceiling": report.get("ceiling"),
                      "wall_seconds": report.get("wall_seconds")},
            "problems": [_problem_line(p, row["filename"]) for p in report.get("problems", [])],
        }  # fmt: skip

    def reject(self, plan_id: int, by: str = "a person") -> dict[str, Any]:
        """Refuse a held plan for good; it is never issued (submitting it again holds it anew)."""
        status = self.summary(plan_id)["status"]
        if status != "held":
            raise ValueError(f"Plan {plan_id} is {status}, not held; only a held plan can be "
                             "rejected.")  # fmt: skip
        row = self._row(plan_id)
        seal = self._decision_seal(row["sha256"], row["policy_sha256"], row["price_sha256"],
                                   "rejected")  # fmt: skip
        self.store.reject(plan_id, time.time(), by, seal)
        return self.summary(plan_id)

    def approve(self, plan_id: int, by: str = "a person") -> ApprovedPlan:
        """Let a held plan go. Its stored source is checked again and bound to the policy. A plan
        approved already stays as it was decided (by the policy, or by whoever let it go)."""
        row = self._row(plan_id)
        if row["status"] == "approved" and row["policy_sha256"] == self.terms_sha256():
            return self.approved(plan_id)
        if row.get("rejected_by") is not None:
            raise PlanRefused((), filename=row["filename"]) from ValueError(
                f"Plan {plan_id} was rejected by {row['rejected_by']}; submit it again."
            )
        if row["policy_sha256"] != self.terms_sha256():
            raise PlanRefused((), filename=row["filename"]) from ValueError(
                f"Plan {plan_id} was priced under another policy, or other settings or "
                "inputs; submit it again."
            )
        seal = self._decision_seal(row["sha256"], row["policy_sha256"], row["price_sha256"],
                                   "approved")  # fmt: skip
        self.store.decide(plan_id, "approved", time.time(), by, seal)
        return self.approved(plan_id)

    def approved(self, plan_id: int) -> ApprovedPlan:
        """The approved plan ``plan_id``, compiled again from its stored source."""
        row = self._row(plan_id)
        if row["status"] != "approved":
            raise PlanRefused((), filename=row["filename"]) from ValueError(
                f"Plan {plan_id} is {row['status']}, not approved."
            )
        if row["policy_sha256"] != self.terms_sha256():
            raise PlanRefused((), filename=row["filename"]) from ValueError(
                f"Plan {plan_id} was approved under another policy, or priced under other "
                "settings or inputs; submit it again."
            )
        checked = check(row["source"], row["filename"])
        if checked.sha256 != row["sha256"] or not checked.ok:
            raise TamperedPlan(f"the stored source of plan {plan_id} changed")
        return self._issue(plan_id, row["source"], checked, row["price_sha256"],
                           json.loads(row["price_json"]))  # fmt: skip

    def find_approved(self, source: str) -> ApprovedPlan | None:
        """An existing approval for exactly this source under this policy, if any."""
        found = self.store.latest_approved(source_sha256(source), self.terms_sha256())
        return None if found is None else self.approved(found)

    def _row(self, plan_id: int) -> dict[str, Any]:
        """The stored decision ``plan_id``; ``TamperedPlan`` unless its seal verifies."""
        row = self.store.row(plan_id)
        if row is None:
            raise KeyError(f"There is no plan {plan_id} at this gate.")
        # a row of any status (a held plan too): not "the approved plan"
        if not seal_holds(self._decision_key, row):
            raise TamperedPlan(f"the stored decision on plan {plan_id} does not match its seal "
                               "(tampered with in the store, or sealed with another key)",
                               headline=_STORE_HEADLINE)  # fmt: skip
        if _price_sha_of_json(row["price_json"]) != row["price_sha256"]:
            raise TamperedPlan(f"the stored price of plan {plan_id} is not the price it was "
                               "decided at (tampered with in the store)",
                               headline=_STORE_HEADLINE)  # fmt: skip
        return row


_STORE_HEADLINE = "A decision in the gate's store does not verify"


def _problem_line(problem: Mapping[str, Any], filename: str) -> str:
    """A stored price problem as the price report prints it."""
    line = problem.get("line")
    where = f"{filename}:{line}" if line else filename
    times = f" ({problem['count']} times)" if problem.get("count", 1) > 1 else ""
    return f"{where}: {problem.get('kind')}: {problem.get('message')}{times}"
