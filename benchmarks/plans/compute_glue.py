# ruff: noqa: F821, B018, B007  (a plan: host words are supplied by the executor)
# Compute glue, no host calls: loops, comprehensions, dict counting, string building and
# sorting with key lambdas, the pure-Python work a plan does between agent calls.
# Common subset of every executor; the bare `result` is for executors that return the last
# expression.
words = [f"w{(n * 7919) % 211}" for n in range(2000)]
counts = {}
for word in words:
    counts[word] = counts.get(word, 0) + 1
ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
by_length = {}
for word, count in ranked:
    by_length[len(word)] = by_length.get(len(word), 0) + count
lines = []
for word, count in ranked[:50]:
    lines.append(word + "=" + str(count))
text = ", ".join(lines)


def checksum(s):
    total = 0
    for ch in s:
        total = (total * 31 + ord(ch)) % 1000003
    return total


sums = {word: checksum(word) for word in counts}
grid = [[row * col for col in range(12)] for row in range(12)]
trace = sum(grid[k][k] for k in range(12))
evens = [n * n for n in range(1500) if n % 3 == 0]
step = 0
acc = 0
while step < 500:
    acc = acc + step % 7
    step = step + 1
pieces = []
for n in range(200):
    pieces.append(f"{n:03d}")
label = "-".join(pieces)
records = [{"name": word, "count": count, "sum": sums[word]} for word, count in ranked]
top = sorted(records, key=lambda r: (r["sum"] % 97, r["name"]))[:10]
result = {
    "distinct": len(counts),
    "lengths": by_length,
    "text_len": len(text),
    "trace": trace,
    "evens": len(evens),
    "acc": acc,
    "label_len": len(label),
    "top": [r["name"] for r in top],
}
result
