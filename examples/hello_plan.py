# A first plan: ask two workers about two files, then summarise.
phase("read")
files = inputs["files"]
notes = parallel([lambda f=f: agent(f"Summarise {f} in one line.", schema=SUMMARY) for f in files])
phase("summarise")
summary = agent("Combine these notes: " + "; ".join(n["line"] for n in notes))
log(f"{len(notes)} notes read")
result = {"notes": notes, "summary": summary}
