"""A small MCP server for the MCP example: notes kept in a JSON file (stdio).

``search`` is read-only and declares an ``outputSchema``; ``add_note`` has an effect and says
it is not idempotent (adding twice makes two notes); ``delete_note`` is destructive. The notes
live in ``$NOTES_FILE`` (default ``.planlang/example_notes.json`` beside this file).
Run by planlang as ``[mcp.servers.notes]`` of ``examples/mcp.toml``; see docs/MCP.md.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import BaseModel

STORE = Path(os.environ.get("NOTES_FILE", Path(__file__).parent / ".planlang/example_notes.json"))
SEED = [
    {"title": "release", "body": "The release deadline is Friday; tests must be green by then."},
    {"title": "budget", "body": "Model spend this month: 40 credits of 100."},
    {"title": "review", "body": "The deadline for review comments is Thursday noon."},
]

app = MCPServer("notes", log_level="WARNING")


class Note(BaseModel):
    title: str
    body: str


class Found(BaseModel):
    notes: list[Note]


def _notes() -> list[dict[str, str]]:
    return json.loads(STORE.read_text(encoding="utf-8")) if STORE.exists() else list(SEED)


def _save(notes: list[dict[str, str]]) -> None:
    STORE.parent.mkdir(parents=True, exist_ok=True)
    STORE.write_text(json.dumps(notes, indent=2), encoding="utf-8")


@app.tool(annotations=ToolAnnotations(read_only_hint=True))
def search(query: str) -> Found:
    """The notes whose title or body contains the query (case-insensitive)."""
    q = query.lower()
    hits = [n for n in _notes() if q in n["title"].lower() or q in n["body"].lower()]
    return Found(notes=[Note(**n) for n in hits])


ADDS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)


@app.tool(annotations=ADDS, structured_output=False)
def add_note(title: str, body: str) -> str:
    """Add a note; returns how many there are."""
    notes = _notes() + [{"title": title, "body": body}]
    _save(notes)
    return f"{len(notes)} notes"


@app.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True),
          structured_output=False)  # fmt: skip
def delete_note(title: str) -> str:
    """Delete every note with this title."""
    notes = _notes()
    kept = [n for n in notes if n["title"] != title]
    _save(kept)
    return f"deleted {len(notes) - len(kept)}"


if __name__ == "__main__":
    app.run()
