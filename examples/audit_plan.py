# The fixed audit plan: scan every shard through every lens, dedupe, three skeptics per batch,
# vote, report. It uses the audit kit's words (kit/audit_words.py, registered in planlang.toml).
# inputs may set: verify (run each candidate's failing call and show skeptics the result),
# batch (findings per skeptic call), samples (skeptics per batch), need (votes to keep one).
verify_calls = inputs.get("verify", False)
batch_size = inputs.get("batch", 8)
samples = inputs.get("samples", 3)
need = inputs.get("need", 2)

phase("shard")
parts = shards()
log(f"{len(parts)} shard(s), {sum(s['tokens'] for s in parts)} tokens, {len(LENSES)} lenses")

phase("scan")
found = parallel([lambda s=s, lens=lens: scan(s, lens) for s in parts for lens in LENSES])
candidates = dedupe(flatten(found))
log(f"{len(flatten(found))} findings at {len(candidates)} places")

evidence = [None for c in candidates]
if verify_calls:
    phase("verify")
    evidence = parallel([lambda c=c: verify(c) for c in candidates])

phase("skeptics")
groups = batches(candidates, batch_size)
proofs = batches(evidence, batch_size)
jobs = []
for index in range(len(groups)):
    for sample in range(samples):
        if verify_calls:
            jobs.append(lambda i=index, k=sample: check(groups[i], sample=k, evidence=proofs[i]))
        else:
            jobs.append(lambda i=index, k=sample: check(groups[i], sample=k))
verdicts = parallel(jobs)
confirmed = vote(candidates, verdicts, need=need)
log(f"{len(confirmed)} of {len(candidates)} places confirmed by at least {need} skeptics")

phase("report")
result = report(confirmed)
