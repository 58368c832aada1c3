"""``planlang mcp serve``: the whole path of a plan, offered to an agent in any MCP client.

Tools: ``check_plan``, ``price_plan``, ``submit_plan`` (the gate's decision and the plan's id),
``run_plan`` (approved plans only: a held plan waits for ``planlang approve`` by a person),
``run_status`` and ``run_result``. The language's contract (docs/LANGUAGE.md, the host words
and the MCP tools a plan may call, with their schemas) is the resource
``planlang://language``, for the client's model to read before it writes a plan.

The server works on the project of the folder it starts in (or ``--config``), exactly as the
CLI does: the same gate store, ledger and runs folder, so ``planlang held``, ``approve``,
``runs`` and ``show`` see what it did.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
from pathlib import Path
from typing import Any

from planlang.check import check
from planlang.check_command import RUN_WORDS, undefined_names
from planlang.cli_ledger import open_shared_budget
from planlang.cli_support import PlanFileError
from planlang.errors import PlanRefused
from planlang.gate import Gate
from planlang.price import price
from planlang.project import Project
from planlang.run import endpoint_client, front_door, start_run
from planlang.run_records import (
    failure_groups,
    new_run_folder,
    write_end,
    write_start,
    write_unstarted,
)
from planlang.run_requests import apply_requests
from planlang.run_watch import ended, stuck_at_budget, thunk_failures
from runtime import LLM, Run
from runtime.run_view import statusline

__all__ = ["PlanService", "build_server"]

LANGUAGE_URI = "planlang://language"
_CORE_WORDS = """## Host words of this project

The run's own words: `agent`, `parallel`, `stream`, `phase`, `log` and `inputs` (above).
"""


class ServiceError(Exception):
    """A request the service refuses; the message is for the client's model."""


class _Served:
    """A run this server started: its record's folder, and its end status once written."""

    def __init__(self, run: Run, folder: Path) -> None:
        self.run, self.folder = run, folder
        self.status: str | None = None
        self.saved = threading.Event()


class PlanService:
    """What the MCP tools do, without MCP (so it can be used and tested on its own)."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.gate = Gate(project.policy, store=project.gate_store, key_file=project.gate_key,
                         settings=project.settings, host=project.host_provider(),
                         inputs=project.inputs)  # fmt: skip
        self._runs: dict[str, _Served] = {}
        self._lock = threading.Lock()
        self._known: frozenset[str] | None = None  # ``_words``

    # -- before a run ------------------------------------------------------------------------

    def check_plan(self, source: str, filename: str = "plan.py") -> dict[str, Any]:
        """As ``planlang check``: the checker's problems, and a name nothing defines (PL301),
        so a client's model hears of a misspelled host word before it prices the plan."""
        source = source.removeprefix("\ufeff")  # as the CLI reads a file
        problems = list(check(source, filename).problems)
        if not any(p.code == "PL001" for p in problems):
            problems = sorted({*problems, *undefined_names(source, filename, self._words())},
                              key=lambda p: (p.line, p.col, p.code))  # fmt: skip
        return {"ok": not problems, "problems": [p.as_dict() for p in problems]}

    def _words(self) -> frozenset[str]:
        """The names a plan of this project may read besides its own: the run's words, the
        project's host words and its MCP servers (once, on first use)."""
        if self._known is None:
            names = set(RUN_WORDS) | {server.name for server in self.project.mcp_servers}
            with contextlib.suppress(Exception):  # a provider that fails: price says why
                provide = self.project.host_provider()
                if provide is not None:
                    names |= set(provide(Run("check", llm=LLM(settings=self.project.settings))))
            self._known = frozenset(names)
        return self._known

    def price_plan(self, source: str, filename: str = "plan.py", seeds: int = 5) -> dict[str, Any]:
        source = source.removeprefix("\ufeff")  # as the CLI reads a file
        if not 1 <= seeds <= 100:
            raise ServiceError(f"seeds={seeds} must be between 1 and 100.")
        try:
            report = price(source, seeds=seeds, settings=self.project.settings,
                           host=self.gate.host, inputs=self.project.inputs,
                           filename=filename)  # fmt: skip
        except PlanRefused as refused:
            return {"ok": False, "problems": [p.as_dict() for p in refused.problems]}
        wall_basis = {"latency": 2.0, "concurrency": self.project.settings.concurrency}
        return _plain({**report.to_dict(), "wall_basis": wall_basis})  # as price --json

    def submit_plan(self, source: str, filename: str = "plan.py") -> dict[str, Any]:
        source = source.removeprefix("\ufeff")  # as the CLI reads a file
        try:
            decision = self.gate.submit(source, filename)
        except PlanRefused as refused:
            return {"status": "refused", "problems": [p.as_dict() for p in refused.problems]}
        held = "" if decision.approved else (
            f" A person must approve it: planlang approve {decision.id}"
        )  # fmt: skip
        return {"id": decision.id, "status": decision.status, "reasons": list(decision.reasons),
                "price": _plain(decision.price.to_dict()),
                "next": f"run_plan(plan_id={decision.id})" + held}  # fmt: skip

    # -- runs ----------------------------------------------------------------------------------

    def run_plan(self, plan_id: int, budget: float | None = None) -> dict[str, Any]:
        if budget is not None and not (math.isfinite(budget) and budget >= 0):  # as run --budget
            raise ServiceError(f"budget={budget} must be a finite number of credits, 0 or more.")
        try:
            approved = self.gate.approved(plan_id)
        except KeyError:
            raise ServiceError(f"There is no plan {plan_id}; submit_plan gives ids.") from None
        except PlanRefused as refused:
            reason = refused.__cause__ or refused
            raise ServiceError(
                f"{reason} A person must approve it first: planlang approve {plan_id}. "
                "run_plan runs approved plans only."
            ) from None
        settings = self.project.settings
        try:
            client = endpoint_client(settings)
        except ValueError as error:
            raise ServiceError(str(error)) from None
        llm = front_door(settings, self.project.ledger, client=client, budget=budget)
        folder = None
        try:
            if self.project.budget is not None:  # a team's budget on the server, as the CLI's
                llm.budget = open_shared_budget(self.project, budget if budget is not None
                                                else settings.cap)  # fmt: skip
            # the CLI's records, written as it writes them: a fresh folder (two runs in one
            # second are two runs), listed as running from the start, so `planlang runs`,
            # `show`, `raise` and `cancel` reach it live, and a server killed mid-run leaves
            # it interrupted
            folder = new_run_folder(self.project.state_dir / "runs", approved.sha256)
            write_start(folder, filename=approved.filename, sha256=approved.sha256,
                        mode="collect", cap=llm.budget.cap)  # fmt: skip
            (folder / "plan.py").write_text(approved.source, encoding="utf-8")  # for report
            run = start_run(approved, llm, title=approved.filename,
                            events_path=folder / "events.jsonl")  # fmt: skip
        except Exception as error:  # nothing started: nothing left open, nothing "running"
            _close(llm, client)
            message = (
                error.message
                if isinstance(error, PlanFileError)
                else str(error)
                if isinstance(error, OSError)
                else f"{type(error).__name__}: {error}"
            )
            if folder is not None:
                write_unstarted(folder, message)
            raise ServiceError(f"The run could not start: {message}") from None
        served = _Served(run, folder)
        with self._lock:
            self._runs[folder.name] = served
        threading.Thread(target=self._watch, args=(served, client), daemon=True).start()
        return {"run_id": folder.name, "status": run.status}

    def _watch(self, served: _Served, client: Any) -> None:
        """The run to its end, as ``planlang run`` off a terminal watches one: requests from
        other shells taken; stuck at its cap (no call in flight), it stops there, recorded
        ``stopped-at-budget`` (no MCP tool raises a cap; a rerun with a larger budget pays
        nothing for the answers already bought)."""
        run, folder = served.run, served.folder
        status = None
        try:
            while not ended(run):
                apply_requests(run, folder)
                if status is None and stuck_at_budget(run):
                    status = "stopped-at-budget"
                    run.cancel("stopped at the budget")
            status = status or run.status
            if status == "completed" and (
                failure_groups(run.threads_json()) or thunk_failures(run)
            ):
                status = "failed"  # as the CLI says it: some worker failed
            write_end(folder, status=status, run=run, result=run.result, cap=run.llm.budget.cap)
            served.status = status  # as recorded: run_status said "running" until now
        finally:
            served.saved.set()
            _close(run.llm, client)

    def _run(self, run_id: str) -> _Served:
        with self._lock:
            found = self._runs.get(run_id)
        if found is None:
            raise ServiceError(f"There is no run {run_id!r} started by this server.")
        return found

    def run_status(self, run_id: str) -> dict[str, Any]:
        served = self._run(run_id)
        run = served.run
        # an ended run is "running" until its record is written: the watcher may still stop it
        # at its cap (run.status then reads "cancelled") or find a failed worker ("completed")
        status = served.status if served.saved.is_set() else "created" if run.status == \
            "created" else "running"  # fmt: skip
        status = status or run.status
        # the line says the status this answer says (a run whose workers failed: failed)
        line = statusline(run.title, status, run.phase_name, run.counts(), run.llm.budget)
        return {"run_id": run_id, "status": status, "statusline": line,
                "accounting": run.accounting.to_dict()}  # fmt: skip

    def run_result(self, run_id: str) -> dict[str, Any]:
        served = self._run(run_id)
        run = served.run
        if not served.saved.is_set() and run.status in ("created", "running"):
            return {"run_id": run_id, "status": run.status, "result": None, "error": None}
        if not served.saved.wait(30):  # the run has ended: its record is being written
            return {"run_id": run_id, "status": "running", "result": None, "error": None}
        path = served.folder / "result.json"
        result = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
        error = None if run.error is None else f"{type(run.error).__name__}: {run.error}"
        # a run that failed only in its workers has no error: why is in these, as `run --json`
        groups = failure_groups(run.threads_json())
        return {"run_id": run_id, "status": served.status or run.status, "result": result,
                "error": error,
                "failures": [{"reason": r, "count": n, "workers": ids} for r, n, ids in groups],
                "thunk_failures": [{"reason": r, "count": n, "line": line}
                                   for r, n, line in thunk_failures(run)]}  # fmt: skip

    # -- the contract --------------------------------------------------------------------------

    def language(self) -> str:
        """docs/LANGUAGE.md and this project's MCP tools with their schemas."""
        doc = Path(__file__).parents[2] / "docs" / "LANGUAGE.md"
        text = doc.read_text(encoding="utf-8") if doc.exists() else "# The plan language\n"
        parts = [text, _CORE_WORDS]
        tools = self.project.mcp_tools()
        if tools is not None:
            parts.append("## MCP tools a plan may call (docs/MCP.md)\n\n```json\n"
                         + json.dumps(tools.describe(), indent=2) + "\n```\n")  # fmt: skip
        return "\n".join(parts)


def _close(llm: Any, client: Any) -> None:
    if llm.ledger is not None:
        llm.ledger.close()
    llm.budget.close()
    client.close()


def _plain(data: Any) -> Any:
    return json.loads(json.dumps(data, default=str))


def build_server(service: PlanService) -> Any:
    """The SDK's ``MCPServer`` with the six tools and the language resource."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    app = MCPServer("planlang", instructions="Write a plan in the plan language (read "
                    f"{LANGUAGE_URI} first), check, price and submit it, then run it once the "
                    "gate approved it.", log_level="WARNING")  # fmt: skip
    reading = ToolAnnotations(read_only_hint=True)
    acting = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)

    def guarded(fn: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except ServiceError as error:
                raise ToolError(str(error)) from None

        return call

    @app.tool(annotations=reading)
    def check_plan(source: str, filename: str = "plan.py") -> dict[str, Any]:
        """Check a plan against the language: ok, and every problem with line and column."""
        return service.check_plan(source, filename)

    @app.tool(annotations=reading)
    def price_plan(source: str, filename: str = "plan.py", seeds: int = 5) -> dict[str, Any]:
        """Rehearse a plan against free stand-ins (no model, no tool is called) and price it."""
        return guarded(service.price_plan)(source, filename, seeds)

    @app.tool(annotations=acting)
    def submit_plan(source: str, filename: str = "plan.py") -> dict[str, Any]:
        """Submit a plan to the gate: its id, approved or held (with reasons), and its price."""
        return service.submit_plan(source, filename)

    @app.tool(annotations=acting)
    def run_plan(plan_id: int, budget: float | None = None) -> dict[str, Any]:
        """Start an approved plan (held plans need `planlang approve ID` by a person)."""
        return guarded(service.run_plan)(plan_id, budget)

    @app.tool(annotations=reading)
    def run_status(run_id: str) -> dict[str, Any]:
        """A run's status, status line and calls and credits so far."""
        return guarded(service.run_status)(run_id)

    @app.tool(annotations=reading)
    def run_result(run_id: str) -> dict[str, Any]:
        """A finished run's result (the plan's `result`) or its error."""
        return guarded(service.run_result)(run_id)

    @app.resource(
        LANGUAGE_URI,
        name="language",
        mime_type="text/markdown",
        description="The plan language's contract and this project's host words.",
    )
    def language() -> str:
        return service.language()

    return app
