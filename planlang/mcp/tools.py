"""The tools of MCP servers as host words: one host object per server, one method per tool.

A plan calls ``files.append_line(path="log.txt", line="done")``: the server's name from the
configuration, the tool's name as a method, the tool's arguments as keywords. Before anything is
sent the arguments are checked against the tool's ``inputSchema``; a bad call fails at the
plan's own line and no request leaves. The call then passes the run's tool door
(``runtime.tools``: ledger, replay, stand-in, in-flight marks, budget). A result is the tool's
``structuredContent`` when it declares an ``outputSchema`` (checked against it, after it was
committed), else the text of its content; a tool error is an ordinary plan error with the tool's
message. In a rehearsal the stand-in answers from the ``outputSchema`` (short text without one):
no tool is ever called, though the servers are started to list their tools.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import json
import keyword
import random
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema.exceptions import SchemaError

from planlang import language as L
from planlang.mcp.config import McpConfigError, ServerConfig
from planlang.mcp.connection import Connection
from planlang.sandbox.wall import HostObject
from planlang.standin import UnsatisfiableSchema, value_for
from planlang.standin_size import OutOfTime
from runtime import Run
from runtime.errors import ToolError
from runtime.json_schema import Validator, check_schema, schema_validator
from runtime.tools import ToolSpec, tool_door

__all__ = ["McpTools", "Tool", "word_name"]

_MAX_PROBLEMS = 3


def word_name(tool: str) -> str:
    """The name a plan calls a tool by: its MCP name with every character a Python identifier
    cannot hold made ``_``; ``t_`` in front when it would start with a digit or ``_``; ``_``
    behind when it is a keyword or an attribute name the language refuses (``send`` ->
    ``send_``)."""
    name = re.sub(r"\W", "_", tool, flags=re.ASCII)
    if not name or name[0].isdigit() or name.startswith("_"):
        name = "t_" + name.lstrip("_")
    if keyword.iskeyword(name) or name in L.FORBIDDEN_ATTRIBUTES:
        name += "_"
    return name


@dataclass(frozen=True)
class Tool:
    """One tool of one server, as listed by it."""

    spec: ToolSpec
    word: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None

    @property
    def name(self) -> str:
        return self.spec.name

    def describe(self) -> dict[str, Any]:
        """The tool as a plan's author needs it (for ``planlang mcp serve``'s contract)."""
        spec = self.spec
        return {
            "call": f"{spec.server}.{self.word}(...)", "tool": spec.tool,
            "description": self.description, "inputSchema": self.input_schema,
            "outputSchema": self.output_schema, "price": spec.price,
            "readOnlyHint": spec.read_only, "destructiveHint": spec.destructive,
            "idempotentHint": spec.idempotent,
        }  # fmt: skip


def _tool(server: ServerConfig, listed: Any) -> Tool:
    hints = listed.annotations
    read_only = bool(hints is not None and hints.read_only_hint)
    destructive = not read_only and not (hints is not None and hints.destructive_hint is False)
    spec = ToolSpec(
        server=server.name,
        tool=listed.name,
        price=float(server.prices.get(listed.name, 0.0)),
        read_only=read_only,
        destructive=destructive,
        idempotent=bool(hints is not None and hints.idempotent_hint),
    )
    schemas = [listed.input_schema, listed.output_schema]
    for schema in schemas:
        if schema is not None:
            try:
                check_schema(schema)
            except SchemaError as error:
                raise McpConfigError(f"The tool {spec.name} has a JSON schema that is not valid: "
                                     f"{error.message}") from None  # fmt: skip
    return Tool(spec, word_name(listed.name), listed.description or "", dict(schemas[0] or {}),
                None if schemas[1] is None else dict(schemas[1]))  # fmt: skip


class McpTools:
    """The tools of some MCP servers: a host provider (``provider(run) -> words``).

    Pass it as ``host=`` to ``planlang.price``, ``Gate`` or a run's words. Servers are started
    (and their tools listed) on first use and stay up until ``close`` (or the process's end).
    With ``log_dir`` each server's stderr goes to ``NAME.log`` there and its listing is recorded
    in ``NAME.tools.json``; ``offline=True`` (replay) reads that record and starts no server.
    """

    def __init__(
        self, servers: Sequence[ServerConfig], *, log_dir: Path | None = None,
        offline: bool = False,
    ) -> None:  # fmt: skip
        names = [server.name for server in servers]
        if names and importlib.util.find_spec("mcp") is None:
            raise McpConfigError("MCP servers need the MCP SDK: pip install -e '.[mcp]'")
        if len(set(names)) != len(names):
            raise McpConfigError(f"Two MCP servers share a name: {sorted(names)}.")
        self.servers = {server.name: server for server in servers}
        self._connections = {
            server.name: Connection(server, log=None if log_dir is None
                                    else log_dir / f"{server.name}.log")
            for server in servers
        }  # fmt: skip
        if log_dir is not None:
            log_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir = log_dir
        self.offline = offline
        self._lock = threading.Lock()
        self._tools: dict[str, dict[str, Tool]] | None = None
        atexit.register(self.close)

    def catalogue(self) -> dict[str, dict[str, Tool]]:
        """server -> plan word -> tool, listed once from every server."""
        with self._lock:
            if self._tools is None:
                tools: dict[str, dict[str, Tool]] = {}
                for name in self._connections:
                    server = self.servers[name]
                    words: dict[str, Tool] = {}
                    for listed in self._listing(name):
                        tool = _tool(server, listed)
                        if tool.word in words:
                            raise McpConfigError(
                                f"The tools {words[tool.word].spec.tool!r} and {listed.name!r} "
                                f"of server {name!r} both become {tool.word!r} in a plan."
                            )
                        words[tool.word] = tool
                    unknown = set(server.prices) - {t.spec.tool for t in words.values()}
                    if unknown:
                        raise McpConfigError(f"[mcp.servers.{name}] prices tools the server "
                                             f"does not offer: {sorted(unknown)}")  # fmt: skip
                    tools[name] = words
                self._tools = tools
            return self._tools

    def _listing(self, name: str) -> list[Any]:
        """A server's tools: asked of it (and recorded), or read from the record offline."""
        from mcp.types import Tool as Listed

        record = None if self.log_dir is None else self.log_dir / f"{name}.tools.json"
        if self.offline:
            if record is None or not record.exists():
                raise McpConfigError(f"Replay sends nothing to MCP server {name!r}, and no "
                                     "listing of its tools was recorded: run once without "
                                     "--replay first.")  # fmt: skip
            return [Listed.model_validate(t) for t in json.loads(record.read_text("utf-8"))]
        listed = self._connections[name].list_tools()
        if record is not None:
            dumped = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed]
            record.write_text(json.dumps(dumped, indent=1), encoding="utf-8")
        return listed

    def describe(self) -> dict[str, list[dict[str, Any]]]:
        return {name: [t.describe() for t in words.values()]
                for name, words in self.catalogue().items()}  # fmt: skip

    def __call__(self, run: Run) -> dict[str, HostObject]:
        door = tool_door(run)
        words: dict[str, HostObject] = {}
        for name, tools in self.catalogue().items():
            for tool in tools.values():
                door.declare(tool.spec)
            target = _ServerWords(name, tools, run, self._connections[name])
            words[name] = HostObject(target, methods=list(tools), name=name)
        return words

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()


class _ServerWords:
    """What a plan's ``server.tool`` reads: one callable per tool (``HostObject`` methods)."""

    def __init__(self, server: str, tools: Mapping[str, Tool], run: Run,
                 connection: Connection) -> None:  # fmt: skip
        self._server, self._tools, self._run, self._connection = server, tools, run, connection
        self._made: dict[str, Callable[..., Any]] = {}  # validators are built once per run

    def __getattr__(self, word: str) -> Callable[..., Any]:
        tools = self.__dict__.get("_tools", {})
        if word not in tools:
            raise AttributeError(word)
        made = self._made.get(word)
        if made is None:
            made = self._made[word] = _word(tools[word], self._run, self._connection)
        return made


def _word(tool: Tool, run: Run, connection: Connection) -> Callable[..., Any]:
    spec = tool.spec
    door = tool_door(run)
    inputs = schema_validator(tool.input_schema)
    outputs = None if tool.output_schema is None else schema_validator(tool.output_schema)

    def call(*args: Any, **kwargs: Any) -> Any:
        if args:
            raise TypeError(f"{spec.server}.{tool.word}() takes the tool's arguments by name "
                            f"(keywords), not {len(args)} positional")  # fmt: skip
        arguments = _plain(kwargs, spec.name)
        problems = _problems(inputs, arguments)
        if problems:  # nothing is sent
            raise TypeError(f"{spec.server}.{tool.word}(): the arguments do not match the "
                            f"tool's inputSchema: {problems}")  # fmt: skip

        def send() -> Any:
            result = connection.call_tool(spec.tool, arguments, stop=door.cancelled)
            text = "\n".join(b.text for b in result.content if getattr(b, "type", "") == "text")
            if result.is_error:
                raise ToolError(f"the tool {spec.name} failed: {text or '(no message)'}")
            return result.structured_content if outputs is not None else text

        def standin() -> Any:
            seed = getattr(run.llm.standin, "seed", 0)
            asked = json.dumps([seed, spec.name, arguments], sort_keys=True)
            rng = random.Random(hashlib.sha256(asked.encode()).digest()[:8])
            try:
                return value_for(tool.output_schema or {"type": "string", "maxLength": 40}, rng)
            except UnsatisfiableSchema as error:
                raise ToolError(f"the stand-in cannot answer {spec.name}: {error}") from None
            except OutOfTime:
                raise ToolError(f"the stand-in stopped making the answer of {spec.name} at the "
                                "plan's time limit") from None  # fmt: skip

        value = door.call(spec, arguments, send=send, standin=standin)
        if outputs is not None:
            problems = _problems(outputs, value)
            if problems:
                raise ToolError(f"the result of {spec.name} does not match its outputSchema: "
                                f"{problems}")  # fmt: skip
        return value

    return call


def _plain(arguments: dict[str, Any], name: str) -> dict[str, Any]:
    """The arguments as JSON data (tuples become lists); anything else is the plan's error."""
    try:
        plain = json.loads(json.dumps(arguments, allow_nan=False))
    except (TypeError, ValueError) as error:
        raise TypeError(f"The arguments of {name} must be JSON data: {error}") from None
    assert isinstance(plain, dict)
    return plain


def _problems(validator: Validator, value: Any) -> str:
    found = []
    for error in sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.path))):
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        found.append(f"at {where}: {error.message}")
        if len(found) == _MAX_PROBLEMS:
            break
    return "; ".join(found)
