# ruff: noqa: F821, B023  (a plan: host words are supplied by the executor)
# Host-call-heavy glue through plan-lambda callbacks: 1,000 agent calls, each in a thunk the
# plan hands to a fan-out word (`fan_out`, an embedder's own word that calls them back).
tasks = [f"task-{n}" for n in range(40)]
roles = ["planner", "coder", "tester", "reviewer", "writer"]
thunks = []
for round_no in range(5):
    for role in roles:
        for task in tasks:
            thunks.append(lambda r=role, t=task, n=round_no: agent(r, f"Round {n}: {t} as {r}."))
replies = fan_out(thunks)
token_total = 0
for reply in replies:
    token_total = token_total + reply["tokens"]
result = {"calls": len(replies), "tokens": token_total}
result
