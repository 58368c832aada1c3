# ruff: noqa: F821
# mypy: ignore-errors
# Design 4 and its ablations: scan every shard through every lens (`rounds` times), then
# `skeptics` skeptics judge every candidate (with the failing call's result when `verify`)
# and a vote keeps what `need` of them call real. skeptics = 0 keeps every candidate.
phase("scan")
parts = shards(inputs["shard_tokens"])
jobs = [[s, lens, r] for r in range(inputs["rounds"]) for s in parts for lens in inputs["lenses"]]
found = parallel([lambda j=j: scan(j[0], j[1], j[2]) for j in jobs])
candidates = dedupe(flatten(found))
verdicts = []
kept = candidates
if inputs["skeptics"] > 0:
    phase("check")
    groups = batches(candidates, inputs["batch"])
    evidence = [None for g in groups]
    if inputs["verify"]:
        phase("verify")
        runs = parallel([lambda c=c: verify(c) for c in candidates])
        evidence = batches(runs, inputs["batch"])
        phase("check")
    asks = [[k, i] for k in range(inputs["skeptics"]) for i in range(len(groups))]
    judged = parallel(
        [lambda a=a: check(groups[a[1]], a[0], "skeptic", evidence[a[1]]) for a in asks]
    )
    n = len(groups)
    verdicts = [flatten(judged[k * n : (k + 1) * n]) for k in range(inputs["skeptics"])]
    kept = vote(candidates, verdicts, need=inputs["need"])
phase("report")
result = {"findings": report(kept), "candidates": candidates, "verdicts": verdicts}
