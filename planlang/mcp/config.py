"""Which MCP servers a project uses: ``[mcp.servers.NAME]`` in ``planlang.toml``.

::

    [mcp.servers.files]
    command = ["python", "files_server.py"]        # stdio: a child process, in this folder
    env = { DATA = "data" }                        # added to PATH, HOME, ... (nothing else)
    prices = { append_line = 0.01 }                # credits per call (default 0)

    [mcp.servers.tickets]
    url = "http://127.0.0.1:8000/mcp"              # streamable HTTP

The name is how a plan calls the server's tools (``files.append_line(...)``), so it must be an
identifier a plan may use. The embedding API takes the same: ``ServerConfig(name=..., ...)``.
"""

from __future__ import annotations

import keyword
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from planlang import language as L

__all__ = ["CORE_WORDS", "McpConfigError", "ServerConfig", "servers_from_table"]

# The run's own host words (planlang.binding) and inputs: a server may not take their names.
CORE_WORDS = frozenset({"agent", "parallel", "stream", "phase", "log", "inputs"})


class McpConfigError(ValueError):
    """The MCP part of a configuration cannot be used; the message says where and why."""


class ServerConfig(BaseModel):
    """One MCP server: a command to start (stdio) or a URL (streamable HTTP)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    command: tuple[str, ...] | None = None
    url: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    prices: dict[str, float] = Field(default_factory=dict)
    timeout: float = Field(default=300.0, gt=0)  # seconds one call may take

    @model_validator(mode="after")
    def _one_transport(self) -> ServerConfig:
        name = self.name
        if not name.isidentifier() or name.startswith("_") or keyword.iskeyword(name):
            raise ValueError(f"the server name {name!r} must be an identifier that does not "
                             "start with '_'")  # fmt: skip
        if name in L.ALLOWED_BUILTINS or name in L.FORBIDDEN_NAMES or name in CORE_WORDS:
            raise ValueError(f"the server name {name!r} is taken by the language or the run")
        if (self.command is None) == (self.url is None):
            raise ValueError(f"server {name!r} needs exactly one of command = [...] or url = ...")
        if self.command is not None and not self.command:
            raise ValueError(f"server {name!r}: command is empty")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"server {name!r}: url must start with http:// or https://")
        if any(price < 0 for price in self.prices.values()):
            raise ValueError(f"server {name!r}: a price cannot be negative")
        return self

    def where(self) -> str:
        """How to reach it, for messages: the command line or the URL."""
        return " ".join(self.command) if self.command is not None else str(self.url)


def servers_from_table(table: Mapping[str, Any], root: Path | None = None) -> list[ServerConfig]:
    """The servers of an ``[mcp]`` table (``root``: the folder relative ``cwd`` is taken from)."""
    unknown = set(table) - {"servers"}
    if unknown:
        raise McpConfigError(f"[mcp]: unknown keys {sorted(unknown)}; expected servers")
    servers = []
    for name, entry in dict(table.get("servers", {})).items():
        if not isinstance(entry, Mapping):
            raise McpConfigError(f"[mcp.servers.{name}] must be a table")
        fields = dict(entry)
        if root is not None:
            fields["cwd"] = str(root / fields["cwd"]) if "cwd" in fields else str(root)
        try:
            servers.append(ServerConfig(name=name, **fields))
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            detail = first["msg"].removeprefix("Value error, ")
            raise McpConfigError(f"[mcp.servers.{name}]{' ' + where if where else ''}: "
                                 f"{detail}") from None  # fmt: skip
    return servers
