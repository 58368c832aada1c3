"""What the run page carries as JSON: every worker's conversation, its texts shared.

A system prompt that 7,000 workers were given is stored once, in a string table the messages
point into. Past a budget of characters in all, the longest texts are cut (texts shorter than
the cut stay whole) with a note saying how much more ``threads.json`` holds, so a run of any
size keeps its page small.
"""

from __future__ import annotations

from typing import Any

__all__ = ["pack_conversations"]


def pack_conversations(
    conversations: dict[int, dict[str, Any]], budget: int
) -> tuple[list[str], dict[str, Any]]:
    """Message texts shared in one table; past ``budget`` characters the longest are cut."""
    index: dict[str, int] = {}
    for conv in conversations.values():
        for role, text in conv["messages"]:
            index.setdefault(role, len(index))
            index.setdefault(text, len(index))
    lengths = sorted(len(s) for s in index)
    cap = _cut_length(lengths, budget)
    strings = []
    for text in index:
        if len(text) > cap:
            text = text[:cap] + f"\u2026 ({len(text) - cap:,} more characters in threads.json)"
        strings.append(text)
    packed = {}
    for worker, conv in conversations.items():
        conv = dict(conv)
        conv["messages"] = [[index[r], index[t]] for r, t in conv["messages"]]
        packed[str(worker)] = conv
    return strings, packed


def _cut_length(lengths: list[int], budget: int) -> int:
    """The longest text length that keeps the sum of all texts within ``budget``."""
    if sum(lengths) <= budget:
        return max(lengths, default=0)
    total, n = 0, len(lengths)
    for i, length in enumerate(lengths):  # ascending: texts shorter than the cut stay whole
        if total + length * (n - i) > budget:
            return max(80, (budget - total) // (n - i))
        total += length
    return max(lengths)
