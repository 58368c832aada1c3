"""How large the least answer a JSON schema allows is: the stand-in refuses to build one past
what a model's reply holds, since it builds answers in the host (REDTEAM14)."""

from __future__ import annotations

from typing import Any

__all__ = ["ANSWER_MOST", "least_size"]

# The most items and characters an answer of the stand-in's may need at least: a model's reply
# is bounded by its tokens, and the stand-in builds its answer, its text and its parse in the
# host, whatever the plan's limits (three nested minItems of 300 made the host grow by 560
# MB for a plan of memory_mb=256; REDTEAM14).
ANSWER_MOST = 1_000_000


def least_size(schema: Any, depth: int = 0) -> int:
    """Items and characters every value valid under ``schema`` has at least (a lower bound:
    a keyword it does not follow counts nothing), counted up to just past ``ANSWER_MOST``."""
    if not isinstance(schema, dict) or depth > 12:
        return 1
    most = ANSWER_MOST + 1
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if not isinstance(kinds, list) or len(kinds) != 1 or "anyOf" in schema or "oneOf" in schema:
        return 1  # a choice of kinds: the cheapest may be small
    kind = kinds[0]
    least = 1
    if kind == "string":
        low = schema.get("minLength", 0)
        least = max(1, low) if type(low) is int else 1
    elif kind == "array":
        low = schema.get("minItems", 0)
        low = min(low, most) if type(low) is int and low > 0 else 0
        prefix = schema.get("prefixItems")
        prefix = prefix[:low] if isinstance(prefix, list) else []
        items = schema.get("items")
        each = least_size(items, depth + 1) if isinstance(items, dict) else 1
        least = 1 + sum(least_size(p, depth + 1) for p in prefix) + (low - len(prefix)) * each
    elif kind == "object":
        low = schema.get("minProperties", 0)
        least = 1 + (min(low, most) if type(low) is int and low > 0 else 0)
        required = schema.get("required")
        properties = schema.get("properties")
        if isinstance(required, list) and isinstance(properties, dict):
            for name in required[:most]:
                if isinstance(name, str):
                    least += least_size(properties.get(name), depth + 1)
                if least > most:
                    break
    for part in schema.get("allOf", ()) if isinstance(schema.get("allOf"), list) else ():
        least = max(least, least_size(part, depth + 1))
    return min(least, most)
