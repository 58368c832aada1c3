# ruff: noqa: F821
# mypy: ignore-errors
# Designs 1 and 2: one agent reads the whole library in as few calls as fit its context
# (inputs: context_tokens), once or `samples` times, and reports everything it found.
phase("read")
parts = shards(inputs["context_tokens"])
asks = [[s, k] for k in range(inputs["samples"]) for s in parts]
found = parallel([lambda a=a: scan(a[0], "general", a[1]) for a in asks])
phase("report")
result = {"findings": report(dedupe(flatten(found)))}
