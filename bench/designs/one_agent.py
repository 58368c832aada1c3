# ruff: noqa: F821
# mypy: ignore-errors
# Designs 1 and 2: one agent is given the whole library in one read (inputs: library_tokens, at
# least the library's size, so shards() packs it into one), once or `samples` times, and
# reports everything it found. A library beyond its context is what it cannot take in at once.
phase("read")
library = shards(inputs["library_tokens"])
asks = [[s, k] for k in range(inputs["samples"]) for s in library]
found = parallel([lambda a=a: scan(a[0], "general", a[1]) for a in asks])
phase("report")
result = {"findings": report(dedupe(flatten(found)))}
