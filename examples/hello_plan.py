# A first plan: ask one worker per file for a one-line summary, then combine them.
# Price it with: planlang price examples/hello_plan.py --config examples/hello.toml
SUMMARY = {"type": "object", "properties": {"line": {"type": "string"}}, "required": ["line"]}
phase("read")
files = inputs["files"]
notes = parallel([lambda f=f: agent(f"Summarise {f} in one line.", schema=SUMMARY) for f in files])
phase("summarise")
lines = [n["line"] for n in notes if n]
summary = agent("Combine these notes: " + "; ".join(lines))
log(f"{len(lines)} notes read")
result = {"notes": lines, "summary": summary}
