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

import json
import threading
import time
from pathlib import Path
from typing import Any

from planlang.check import check
from planlang.errors import PlanError, PlanRefused
from planlang.gate import Gate
from planlang.price import price
from planlang.project import Project
from planlang.run import endpoint_client, front_door, start_run
from runtime import Run, RunError

__all__ = ["PlanService", "build_server"]

LANGUAGE_URI = "planlang://language"
_CORE_WORDS = """## Host words of this project

The run's own words: `agent`, `parallel`, `stream`, `phase`, `log` and `inputs` (above).
"""


class ServiceError(Exception):
    """A request the service refuses; the message is for the client's model."""


class PlanService:
    """What the MCP tools do, without MCP (so it can be used and tested on its own)."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.gate = Gate(project.policy, store=project.gate_store, key_file=project.gate_key,
                         settings=project.settings, host=project.host_provider(),
                         inputs=project.inputs)  # fmt: skip
        self._runs: dict[str, tuple[Run, Path, Any]] = {}
        self._lock = threading.Lock()

    # -- before a run ------------------------------------------------------------------------

    def check_plan(self, source: str, filename: str = "plan.py") -> dict[str, Any]:
        result = check(source, filename)
        return {"ok": result.ok, "problems": [p.as_dict() for p in result.problems]}

    def price_plan(self, source: str, filename: str = "plan.py", seeds: int = 5) -> dict[str, Any]:
        if not 1 <= seeds <= 100:
            raise ServiceError(f"seeds={seeds} must be between 1 and 100.")
        try:
            report = price(source, seeds=seeds, settings=self.project.settings,
                           host=self.gate.host, inputs=self.project.inputs,
                           filename=filename)  # fmt: skip
        except PlanRefused as refused:
            return {"ok": False, "problems": [p.as_dict() for p in refused.problems]}
        return _plain(report.to_dict())

    def submit_plan(self, source: str, filename: str = "plan.py") -> dict[str, Any]:
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
        run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{approved.sha256[:8]}-{plan_id}"
        folder = self.project.state_dir / "runs" / run_id
        llm = front_door(settings, self.project.ledger, client=client, budget=budget)
        ledger = llm.ledger
        assert ledger is not None
        run = start_run(approved, llm, title=approved.filename,
                        events_path=folder / "events.jsonl")  # fmt: skip
        with self._lock:
            self._runs[run_id] = (run, folder, (ledger, client))
        threading.Thread(target=self._finish, args=(run_id,), daemon=True).start()
        return {"run_id": run_id, "status": run.status}

    def _finish(self, run_id: str) -> None:
        run, folder, (ledger, client) = self._runs[run_id]
        result = None
        try:
            result = run.wait()
        except (PlanError, RunError, Exception):  # noqa: BLE001 - recorded on run.error
            pass
        _save(run, folder, result)
        ledger.close()
        client.close()

    def _run(self, run_id: str) -> tuple[Run, Path]:
        with self._lock:
            found = self._runs.get(run_id)
        if found is None:
            raise ServiceError(f"There is no run {run_id!r} started by this server.")
        return found[0], found[1]

    def run_status(self, run_id: str) -> dict[str, Any]:
        run, _folder = self._run(run_id)
        return {"run_id": run_id, "status": run.status, "statusline": run.statusline(),
                "accounting": run.accounting.to_dict()}  # fmt: skip

    def run_result(self, run_id: str) -> dict[str, Any]:
        run, folder = self._run(run_id)
        if run.status in ("created", "running"):
            return {"run_id": run_id, "status": run.status, "result": None, "error": None}
        meta = folder / "result.json"
        deadline = time.monotonic() + 30
        while not meta.exists() and time.monotonic() < deadline:  # _finish is saving it
            time.sleep(0.05)
        result = json.loads(meta.read_text(encoding="utf-8")) if meta.exists() else None
        error = None if run.error is None else f"{type(run.error).__name__}: {run.error}"
        return {"run_id": run_id, "status": run.status, "result": result, "error": error}

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


def _plain(data: Any) -> Any:
    return json.loads(json.dumps(data, default=str))


def _save(run: Run, folder: Path, result: Any) -> None:
    """The run's record, as ``planlang runs`` and ``show`` read it."""
    folder.mkdir(parents=True, exist_ok=True)
    meta = {
        "id": folder.name,
        "filename": run.title,
        "status": run.status,
        "mode": "collect",
        "finished": time.time(),
        "accounting": run.accounting.to_dict(),
        "error": None if run.error is None else f"{type(run.error).__name__}: {run.error}",
    }
    for name, data in (("meta.json", meta), ("threads.json", run.threads_json()),
                       ("result.json", result)):  # fmt: skip
        tmp = folder / (name + ".tmp")
        tmp.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
        tmp.replace(folder / name)


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
