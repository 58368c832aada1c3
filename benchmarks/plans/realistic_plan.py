# ruff: noqa: F821, B018, B007  (a plan: host words are supplied by the executor)
# A realistic plan as a lead model writes one (phases, agent calls, dict/list glue, f-strings,
# a helper def), in the subset planlang, CPython, RestrictedPython, smolagents and monty share.
# The last line is a bare `result` so that executors returning the last expression
# (smolagents, monty) hand back the same value the others read from the namespace.
topic = inputs["topic"]
sources = inputs["sources"]
max_drafts = inputs["max_drafts"]


def summarise(items, limit):
    lines = []
    for item in items[:limit]:
        lines.append(f"- {item['role']}: {item['text'][:40]} ({item['score']:.2f})")
    return "\n".join(lines)


phase("research")
findings = []
for i, source in enumerate(sources):
    reply = agent("researcher", f"Read {source} and report on {topic}, part {i + 1}")
    findings.append(reply)
strong = [f for f in findings if f["score"] > 0.3]
tag_counts = {}
for finding in findings:
    for tag in finding["tags"]:
        tag_counts[tag] = tag_counts.get(tag, 0) + 1
top_tags = sorted(tag_counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5]

phase("draft")
outline = [f"{n}. {tag} (seen {count} times)" for n, (tag, count) in enumerate(top_tags, 1)]
drafts = []
for attempt in range(max_drafts):
    brief = f"Draft {attempt + 1} on {topic}:\n" + "\n".join(outline)
    draft = agent("writer", brief + "\n" + summarise(strong, 4))
    drafts.append({"attempt": attempt, "text": draft["text"], "score": draft["score"]})
best = max(drafts, key=lambda d: d["score"])

phase("review")
reviews = {}
for critic in ["accuracy", "style", "coverage"]:
    verdict = agent("critic", f"Review the draft for {critic}: {best['text']}")
    reviews[critic] = {"ok": verdict["score"] >= 0.25, "tokens": verdict["tokens"]}
failed = sorted(name for name, review in reviews.items() if not review["ok"])
if failed:
    fix = agent("writer", f"Fix {', '.join(failed)} in: {best['text']}")
    best = {"attempt": best["attempt"], "text": fix["text"], "score": fix["score"]}

tokens = sum(f["tokens"] for f in findings) + sum(r["tokens"] for r in reviews.values())
report = {
    "topic": topic,
    "best": best["text"],
    "score": round(best["score"], 3),
    "outline": outline,
    "failed_reviews": failed,
    "sources_used": len(strong),
    "tokens": tokens,
}
result = report
result
