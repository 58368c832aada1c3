"""A project's configuration for the CLI: ``planlang.toml``.

One file says everything a command needs besides the plan: the runtime settings (the
``[planlang]`` table, read by ``runtime.Settings``), the host words to register and the inputs
to hand in (``[plan]``), the gate's policy (``[gate]``) and where state lives (``[state]``)::

    [planlang]
    concurrency = 8
    max_agents = 200
    [planlang.roles.scan]
    model = "small"
    price = 0.02

    [plan]
    host = ["kit.audit_words:audit_words"]     # module:callable(run, **options) -> {name: word}
    options = { corpus = "data/algos/audited" }
    inputs = "inputs.json"              # a JSON file, or an inline table

    [gate]
    max_ceiling = 50
    max_median = 5

    [state]
    dir = ".planlang"                   # gate.db, answers.db, runs/
    ledger = "postgresql://planlang@db.example/team"   # default: <dir>/answers.db
    gate = "postgresql://planlang@db.example/team"     # default: <dir>/gate.db
    gate_key = "~/.config/planlang/gate.key"           # seals the gate's decisions
    budget = "team"                     # a named budget shared on the ledger's server

    [mcp.servers.files]                 # MCP servers whose tools a plan may call (docs/MCP.md)
    command = ["python", "files_server.py"]

Relative paths are taken from the folder of the file. Host providers are imported by name, so
planlang itself never imports the kit: the dependency stays one-way.
"""

from __future__ import annotations

import importlib
import json
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from planlang.config_errors import (
    ProjectError,
    check_keys,
    options_for,
    provider_failed,
    settings_line,
    validation_line,
)
from planlang.gate import Policy
from planlang.mcp.config import McpConfigError, ServerConfig, servers_from_table
from runtime import LLM, Run, Settings
from runtime.stores import backend

__all__ = ["DEFAULT_NAME", "Project", "ProjectError", "load_project"]

DEFAULT_NAME = "planlang.toml"


@dataclass
class Project:
    root: Path
    settings: Settings
    policy: Policy
    state_dir: Path
    host_specs: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    inputs: Any = None
    source: Path | None = None
    ledger: str = ""  # where answers live: a file path or a postgresql:// address
    gate_store: str = ""  # the same for the gate's decisions
    gate_key: Path | None = None  # None: planlang.gate_seal.default_key_path()
    budget: str | None = None  # the name of a budget shared on the ledger's server
    mcp_servers: list[ServerConfig] = field(default_factory=list)
    offline_tools: bool = False  # replay: the servers' recorded listings, no server started
    _mcp: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.ledger = self.ledger or str(self.state_dir / "answers.db")
        self.gate_store = self.gate_store or str(self.state_dir / "gate.db")

    def mcp_tools(self) -> Any:
        """The configured MCP servers' tools (``planlang.mcp.tools.McpTools``), or None."""
        if not self.mcp_servers:
            return None
        if self._mcp is None:
            from planlang.mcp.tools import McpTools  # the SDK only when a project uses it

            self._mcp = McpTools(self.mcp_servers, log_dir=self.state_dir / "mcp",
                                 offline=self.offline_tools)  # fmt: skip
        return self._mcp

    def host_provider(self) -> Callable[[Run], Mapping[str, Any]] | None:
        """One provider calling each configured ``module:callable(run, **options)``, and the
        MCP servers' tools (listed now: a server that cannot start is the project's error).

        Each provider gets the options its signature takes; an option no provider takes is a
        typo. The providers' words are built once here, so a provider refusing its options (a
        corpus that does not exist, a count that is not a number) is a config mistake now, not
        a crash in the middle of a rehearsal.
        """
        mcp = self.mcp_tools()
        if mcp is not None:
            from runtime import RunError

            try:
                mcp.catalogue()
            except (McpConfigError, RunError) as error:
                raise ProjectError(f"{self.source or 'the project'}: {error}") from None
        if not self.host_specs and mcp is None:
            return None
        file = self.source or Path(DEFAULT_NAME)
        bound, taken = [], set()
        for spec in self.host_specs:
            provider = _import(file, spec)
            options, names = options_for(file, spec, provider, self.options)
            bound.append((spec, provider, options))
            taken |= names
        for key in self.options:
            if key not in taken:
                raise ProjectError(f"{file}: [plan] options.{key}: unknown option; no host "
                                   f"provider takes it ({', '.join(self.host_specs)})")  # fmt: skip

        def own_words(run: Run) -> dict[str, Any]:
            words: dict[str, Any] = {}
            for spec, provider, options in bound:
                try:
                    words.update(provider(run, **options))
                except (OSError, ValueError, TypeError, KeyError) as error:
                    raise ProjectError(provider_failed(file, spec, options, error)) from None
            return words

        def provide(run: Run) -> Mapping[str, Any]:
            words: dict[str, Any] = {}
            words.update(own_words(run))
            if mcp is not None:
                words.update(mcp(run))
            return words

        own_words(Run("planlang.toml check", llm=LLM(settings=self.settings)))
        return provide


def _import(file: Path, spec: str) -> Callable[..., Mapping[str, Any]]:
    module_name, _, attr = spec.partition(":")
    where = f"{file}: [plan] host {spec!r}"
    if not module_name or not attr:
        raise ProjectError(f"{where}: a host provider is written 'module:callable'")
    try:
        module = importlib.import_module(module_name)
        provider = getattr(module, attr)
    except (ImportError, AttributeError) as error:
        raise ProjectError(f"{where}: cannot load the host provider: {error}") from None
    if not callable(provider):
        raise ProjectError(f"{where}: the host provider is not callable")
    return provider


def _settings(file: Path | None, table: Mapping[str, Any]) -> Settings:
    """The run's settings from the file's ``[planlang]`` table and the environment; a refused
    value names the variable or the key it came from (``config_errors.settings_line``)."""
    try:
        return Settings.load(file) if file is not None and "planlang" in table else Settings()
    except (ValueError, TypeError) as error:  # ValidationError and SettingsError among them
        raise ProjectError(settings_line(file, Settings.model_fields, error)) from None


def load_project(path: str | Path | None = None, *, start: Path | None = None) -> Project:
    """Read ``path`` (or ``planlang.toml`` in ``start``/the current folder, if there is one)."""
    if path is None:
        candidate = (start or Path.cwd()) / DEFAULT_NAME
        path = candidate if candidate.exists() else None
    if path is None:
        root = start or Path.cwd()
        return Project(root, _settings(None, {}), Policy(), root / ".planlang")
    file = Path(path)
    try:
        table = tomllib.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ProjectError(f"{file}: no such configuration file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ProjectError(f"{file}: cannot read: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ProjectError(f"{file}: not valid TOML: {error}") from None
    root = file.resolve().parent
    unknown = set(table) - {"planlang", "plan", "gate", "state", "mcp"}
    if unknown:
        raise ProjectError(f"{file}: unknown tables {sorted(unknown)}; expected planlang, plan, "
                           "gate, state, mcp")  # fmt: skip
    for name in ("planlang", "plan", "gate", "state", "mcp"):
        if not isinstance(table.get(name, {}), dict):
            raise ProjectError(f"{file}: [{name}] must be a table")
    try:
        servers = servers_from_table(table.get("mcp", {}), root)
    except McpConfigError as error:
        raise ProjectError(f"{file}: {error}") from None
    plan = table.get("plan", {})
    state = table.get("state", {})
    check_keys(file, "plan", plan, ("host", "options", "inputs"))
    check_keys(file, "state", state, ("dir", "ledger", "gate", "gate_key", "budget"))
    if not isinstance(plan.get("host", []), list) or not all(
        isinstance(spec, str) for spec in plan.get("host", [])
    ):
        raise ProjectError(f"{file}: [plan] host: a list of 'module:callable' strings")
    if not isinstance(plan.get("options", {}), dict):
        raise ProjectError(f"{file}: [plan] options: must be a table")
    if not isinstance(state.get("dir", ".planlang"), str):
        raise ProjectError(f"{file}: [state] dir: must be a folder name")
    settings = _settings(file, table)
    try:
        policy = Policy(**table.get("gate", {}))
    except ValidationError as error:
        raise ProjectError(validation_line(file, "gate", error)) from None
    return Project(
        root=root,
        settings=settings,
        policy=policy,
        state_dir=root / state.get("dir", ".planlang"),
        **_stores(state, root, file),
        host_specs=list(plan.get("host", [])),
        options=_resolve_paths(plan.get("options", {}), root),
        inputs=_inputs(plan.get("inputs"), root, file),
        source=file,
        mcp_servers=servers,
    )


def _stores(state: dict[str, Any], root: Path, file: Path) -> dict[str, Any]:
    """The ``[state]`` stores: a path (relative to the config) or a ``postgresql://`` address."""
    unknown = set(state) - {"dir", "ledger", "gate", "gate_key", "budget"}
    if unknown:
        raise ProjectError(f"{file}: [state] has unknown keys {sorted(unknown)}; expected dir, "
                           "ledger, gate, gate_key, budget")  # fmt: skip
    found: dict[str, Any] = {}
    for key, field_name in (("ledger", "ledger"), ("gate", "gate_store")):
        value = state.get(key)
        if value is None:
            continue
        try:
            kind = backend(str(value))
        except ValueError as error:
            raise ProjectError(f"{file}: [state] {key}: {error}") from None
        found[field_name] = str(value) if kind == "postgresql" else str(root / str(value))
    if "gate_key" in state:
        found["gate_key"] = root / Path(str(state["gate_key"])).expanduser()
    if "budget" in state:
        if backend(found.get("ledger", "")) != "postgresql":
            raise ProjectError(f"{file}: [state] budget = {state['budget']!r} is a budget shared "
                               "on a server: it needs ledger = \"postgresql://...\"")  # fmt: skip
        found["budget"] = str(state["budget"])
    return found


def _resolve_paths(options: dict[str, Any], root: Path) -> dict[str, Any]:
    """Option values naming existing files or folders relative to the config become absolute."""
    resolved = {}
    for key, value in options.items():
        if isinstance(value, str) and (root / value).exists():
            value = str(root / value)
        resolved[key] = value
    return resolved


def _inputs(value: Any, root: Path, file: Path) -> Any:
    if not isinstance(value, str):
        return value
    inputs_path = root / value
    try:
        return json.loads(inputs_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ProjectError(f"{file}: the inputs file {value!r} does not exist") from None
    except json.JSONDecodeError as error:
        raise ProjectError(f"{file}: the inputs file {value!r} is not JSON: {error}") from None
    except UnicodeDecodeError as error:
        byte = error.object[error.start]
        raise ProjectError(f"{file}: the inputs file {value!r} is not UTF-8 text (byte "
                           f"{error.start} is {byte:#04x})") from None  # fmt: skip
    except RecursionError:
        raise ProjectError(f"{file}: the inputs file {value!r} is not JSON planlang can read: "
                           "nested too deeply") from None  # fmt: skip
    except OSError as error:  # a folder, say, or not readable
        raise ProjectError(f"{file}: the inputs file {value!r} cannot be read: "
                           f"{error.strerror or error}") from None  # fmt: skip
