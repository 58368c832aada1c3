# A plan that calls MCP tools: each server of the project is a host object, each tool a method.
#   planlang price examples/mcp_plan.py --config examples/mcp.toml   (docs/MCP.md)
phase("gather")
found = notes.search(query="deadline")
lines = [f"{n['title']}: {n['body']}" for n in found["notes"]]
phase("summarise")
summary = agent("Say in one sentence which deadlines these notes set:\n" + "\n".join(lines),
                model="summary")  # fmt: skip
if summary:
    notes.add_note(title="deadlines", body=summary)
result = {"notes": len(lines), "summary": summary}
