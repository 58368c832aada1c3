"""Tools of MCP servers as host words, and planlang as an MCP server (docs/MCP.md).

``McpTools(servers)`` is a host provider; ``ServerConfig`` describes one server, as
``[mcp.servers.NAME]`` does in ``planlang.toml``. Nothing here imports the SDK until a server is
started.
"""

from planlang.mcp.config import McpConfigError, ServerConfig
from planlang.mcp.tools import McpTools

__all__ = ["McpConfigError", "McpTools", "ServerConfig"]
