"""A real MCP server for the tests, written with the SDK and run as a stdio child process.

Its tools cover the cases planlang must handle: ``lookup`` is read-only; ``append_line``
appends a line to a file (an effect, ``idempotentHint: false``), and hangs after appending a
line that starts with "hang" (so a test can kill a run mid-call); ``set_value`` writes a file
(``idempotentHint: true``) and hangs once while a ``PATH.hang`` file exists; ``stats`` has an
``outputSchema`` and breaks it for the text "break" (a number as a string); ``fail`` raises;
``drop`` is destructive; ``die`` ends the server process. With ``--http PORT`` it serves
streamable HTTP on 127.0.0.1 instead of stdio.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel

app = MCPServer("planlang-test-tools")
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)


def _hang(path: str) -> None:
    """Say who is hanging (PATH.pid, so the test can end this process), then hang."""
    Path(path + ".pid").write_text(str(os.getpid()), encoding="utf-8")
    time.sleep(3600)


class Stats(BaseModel):
    words: int
    chars: int


@app.tool(annotations=ToolAnnotations(read_only_hint=True), structured_output=False)
def lookup(term: str) -> str:
    """What a term means."""
    return f"{term}: a word"


@app.tool(annotations=WRITE, structured_output=False)
def append_line(path: str, line: str) -> str:
    """Append one line to a file; returns how many lines it has."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")
    if line.startswith("hang"):
        _hang(path)
    return f"{len(Path(path).read_text(encoding='utf-8').splitlines())} lines"


@app.tool(
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True),
    structured_output=False,
)
def set_value(path: str, value: str) -> str:
    """Write a file's whole content."""
    Path(path).write_text(value, encoding="utf-8")
    flag = Path(path + ".hang")
    if flag.exists():
        flag.unlink()
        _hang(path)
    return "set"


@app.tool(structured_output=True)
def stats(text: str) -> Annotated[CallToolResult, Stats]:
    """Count the words and characters of a text."""
    counts = {"words": len(text.split()), "chars": len(text)}
    if text == "break":  # the server checks laxly (pydantic takes "5" as 5), the schema does not
        counts = {"words": str(counts["words"]), "chars": counts["chars"]}
    return CallToolResult(
        content=[TextContent(type="text", text=str(counts))], structured_content=counts
    )


@app.tool(structured_output=False)
def fail(reason: str) -> str:
    """Always fails, with the reason."""
    raise ToolError(f"refused: {reason}")


@app.tool(
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True),
    structured_output=False,
)
def drop(name: str) -> str:
    """Pretends to delete something."""
    return f"dropped {name}"


@app.tool(annotations=WRITE, structured_output=False)
def die(code: int) -> str:
    """Ends the server process at once."""
    os._exit(code)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":  # streamable HTTP on 127.0.0.1:PORT/mcp
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        app.run()
