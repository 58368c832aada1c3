# ruff: noqa: F821
# mypy: ignore-errors
# Design 3: a lead hands out one task (a shard through a lens) at a time and reads every
# report before the next, keeping what it believes; at most `max_tasks` tasks (the budget).
REVIEW = {
    "type": "object",
    "required": ["keep"],
    "properties": {"keep": {"type": "array", "items": {"type": "string"}}},
}
LEAD = (
    "ROLE: review\nYou lead a bug audit. A worker just reported findings on one part of the "
    "library. List the keys (path::function) of the findings you believe are real bugs."
)
phase("work")
parts = shards(inputs["shard_tokens"])
tasks = [[s, lens] for lens in inputs["lenses"] for s in parts][: inputs["max_tasks"]]
kept = []
for task in tasks:
    found = scan(task[0], task[1])
    review = agent(
        f"Report {len(kept)} kept so far; read this one.",
        schema=REVIEW,
        model="lead",
        system=LEAD,
        data={"findings": found},
    )
    keep = review["keep"] if review else []
    kept = kept + [f for f in found if key_of(f) in keep]
phase("report")
result = {"findings": report(dedupe(kept))}
