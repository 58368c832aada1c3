# ruff: noqa: F821, B018, B007  (a plan: host words are supplied by the executor)
# Host-call-heavy glue: exactly 1,000 agent calls, with the loops, comprehensions and dict work
# a plan puts around them (prompt building, bookkeeping, ranking). Common subset of every
# executor; the bare `result` at the end is for executors that return the last expression.
tasks = [f"task-{n}" for n in range(40)]
roles = ["planner", "coder", "tester", "reviewer", "writer"]
by_role = {}
token_total = 0
best = []
for round_no in range(5):
    for role in roles:
        for task in tasks:
            reply = agent(role, f"Round {round_no}: handle {task} as the {role}.")
            token_total = token_total + reply["tokens"]
            by_role[role] = by_role.get(role, 0) + 1
            if reply["score"] > 0.9:
                best.append((reply["score"], role, task))
tag_counts = {}
ranked = sorted(best, key=lambda item: (-item[0], item[2]))[:10]
for score, role, task in ranked:
    tag_counts[role] = tag_counts.get(role, 0) + 1
result = {
    "calls": sum(by_role.values()),
    "tokens": token_total,
    "by_role": by_role,
    "best": [f"{role}/{task}={score:.3f}" for score, role, task in ranked],
    "tags": tag_counts,
}
result
