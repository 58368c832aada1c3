"""How large an answer the stand-in may build: never past what a model's reply holds, since it
builds answers in the host (REDTEAM14). ``least_size`` refuses a schema at once when every
answer the makers would build is too large; ``spend``, called by both makers as they build,
stops any other build at the same bound (a choice, a ``$ref``, a kind the makers guess)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

from runtime.linear_regex import watching

__all__ = ["ANSWER_MOST", "AnswerTooLarge", "OutOfTime", "UnsatisfiableSchema", "budget", "fits",
           "guess_kind", "least_size", "resolve_ref", "spend", "tick", "tick_chunk",
           "value_size"]  # fmt: skip

# The most items and characters an answer of the stand-in's may need at least: a model's reply
# is bounded by its tokens, and the stand-in builds its answer, its text and its parse in the
# host, whatever the plan's limits (three nested minItems of 300 made the host grow by 560
# MB for a plan of memory_mb=256; REDTEAM14).
ANSWER_MOST = 1_000_000


class UnsatisfiableSchema(ValueError):
    """No value the stand-in can make satisfies this schema (or the schema is invalid)."""


class AnswerTooLarge(Exception):
    """A build of the stand-in's passed ``ANSWER_MOST`` items and characters."""


class OutOfTime(Exception):
    """The plan's time ran out while the stand-in built or checked an answer for it."""


class _Budget(threading.local):
    # items and characters the answer being built on this thread may still add (None: no
    # answer is being built here, as when a test calls a maker itself)
    left: int | None = None
    deadline: float | None = None  # time.monotonic() past which its plan is out of time
    ticks = 0


_BUDGET = _Budget()
_TICKS = 1024  # ticks between looks at the clock: about a millisecond of building or checking


@contextlib.contextmanager
def budget(deadline: float | None = None) -> Iterator[None]:
    """An answer is built on this thread within: ``ANSWER_MOST`` for all of its tries, and
    ``tick`` raises ``OutOfTime`` once ``deadline`` (its plan's, on ``time.monotonic``) passes:
    a plan of 2 seconds asking for a million items to be built and checked eight times held
    the host's CPU a minute (red team 17)."""
    previous = _BUDGET.left, _BUDGET.deadline
    _BUDGET.left, _BUDGET.deadline = ANSWER_MOST, deadline
    try:
        with watching(_searching):  # a costly pattern search looks at the clock first
            yield
    finally:
        _BUDGET.left, _BUDGET.deadline = previous


def _searching(cost: int) -> None:
    tick_chunk()


def tick_chunk() -> None:
    """A chunk of ``_TICKS`` steps done: ``OutOfTime`` if its plan's deadline has passed."""
    deadline = _BUDGET.deadline
    if deadline is not None and time.monotonic() > deadline:
        raise OutOfTime


def tick() -> None:
    """One step of building or checking an answer: ``OutOfTime`` once its plan's deadline has
    passed (the clock is read every ``_TICKS``)."""
    state = _BUDGET
    state.ticks += 1
    if state.ticks >= _TICKS:
        state.ticks = 0
        if state.deadline is not None and time.monotonic() > state.deadline:
            raise OutOfTime


def spend(n: int) -> None:
    """Count ``n`` items or characters about to be built (AnswerTooLarge past the budget)."""
    left = _BUDGET.left
    if left is None:
        return
    left -= max(n, 0)
    _BUDGET.left = left
    if left < 0:
        raise AnswerTooLarge


def guess_kind(schema: dict[str, Any]) -> str:
    """The kind the makers build for a node that names no type."""
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    if "minimum" in schema or "maximum" in schema:
        return "integer"
    return "string"


def resolve_ref(root: Any, ref: Any) -> Any:
    """A local ``$ref``'s target within ``root`` (None: not local, or it names nothing), its
    JSON pointer stepping into objects by name and into arrays by index (``#/allOf/0``),
    percent-encoded as a URI fragment is (``#/$defs/a%20b``); ``#name`` an ``$anchor``; a ref
    through the root's own ``$id`` (``https://example.com/root#/$defs/a``) is local too."""
    if isinstance(ref, str) and isinstance(root, dict) and isinstance(root.get("$id"), str):
        base = root["$id"].split("#")[0]
        if base and ref.startswith(base) and ref[len(base) :][:1] in ("", "#"):
            ref = "#" + ref[len(base) :].lstrip("#")
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    fragment = unquote(ref[1:])
    if fragment and not fragment.startswith("/"):
        return _anchored(root, fragment)
    node: Any = root
    for part in fragment.strip("/").split("/"):
        if not part:
            continue
        name = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict):
            node = node.get(name)
        elif isinstance(node, list) and name.isdigit() and int(name) < len(node):
            node = node[int(name)]
        else:
            return None
    return node


def _anchored(root: Any, anchor: str) -> Any:
    """The node whose ``$anchor`` is ``anchor`` (None if none), looking at most ``_VISITS``."""
    stack, seen = [root], 0
    while stack and seen < _VISITS:
        node = stack.pop()
        seen += 1
        if isinstance(node, dict):
            if node.get("$anchor") == anchor:
                return node
            stack.extend(v for k, v in node.items() if k not in ("const", "enum", "default",
                                                               "examples"))  # fmt: skip
        elif isinstance(node, list):
            stack.extend(node)
    return None


def value_size(value: Any, most: int = ANSWER_MOST + 1) -> int:
    """A listed value's items and characters (a text counts its characters), counted up to
    ``most``: a const of 8,000 lists repeated 1,000 times is 8 million, not 1,000."""
    if type(value) is str:
        return max(1, len(value))
    if not isinstance(value, list | dict):
        return 1
    size, stack = 0, [value]
    while stack and size < most:
        item = stack.pop()
        size += max(1, len(item)) if type(item) is str else 1
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            size += len(item)  # the keys
            stack.extend(item.values())
    return size


_VISITS = 10_000  # nodes one count looks at: past them a node counts 1 (a lower bound still)


def least_size(schema: Any, root: Any = None, memo: dict[Any, int] | None = None) -> int:
    """Items and characters every answer the makers build for ``schema`` has at least (a
    lower bound: a keyword it does not follow counts nothing), counted up to just past
    ``ANSWER_MOST``: a local ``$ref`` is followed (within ``root``, the whole schema), a node
    without a type counts as the kind the makers guess for it, and a choice (``anyOf``,
    ``oneOf``, a list of types) as its smallest. Each node is counted once (``memo``, which a
    maker keeps for its schema), and at most ``_VISITS`` nodes a call: ``$ref``s reached twice
    a level would make the count exponential."""
    return _Count(schema if root is None else root, memo).least(schema, 0)


def fits(schema: Any, root: Any, memo: dict[Any, int], kind: str | None = None) -> bool:
    """Whether the makers can build an answer for ``schema`` (as ``kind``, if given) within
    ``ANSWER_MOST``: a choice is made only among those that fit (``least_size``)."""
    return _Count(root, memo).least(schema, 0, kind) <= ANSWER_MOST


class _Count:
    def __init__(self, root: Any, memo: dict[Any, int] | None):
        self.root = root
        self.memo: dict[Any, int] = {} if memo is None else memo
        self.visits = _VISITS

    def least(self, schema: Any, depth: int, kind: str | None = None) -> int:
        if not isinstance(schema, dict) or depth > 12:
            return 1
        key = (id(schema), kind)  # every node lives as long as the root that holds it
        found = self.memo.get(key)
        if found is None:
            self.visits -= 1
            if self.visits < 0:
                return 1
            found = self.memo[key] = self._least(schema, depth, kind)
        return found

    def _least(self, schema: dict[str, Any], depth: int, kind: str | None) -> int:
        most = ANSWER_MOST + 1
        if kind is None:
            if "$ref" in schema:
                return self.least(resolve_ref(self.root, schema["$ref"]), depth + 1)
            if "const" in schema:  # the value itself, as large as it is (red team 22)
                return value_size(schema["const"], most)
            if "enum" in schema:
                enum = schema["enum"]
                return min((value_size(v, most) for v in enum), default=1) if isinstance(
                    enum, list) else 1  # fmt: skip
            for key in ("oneOf", "anyOf"):
                choices = schema.get(key)
                if isinstance(choices, list) and choices:
                    return min(self.least(choice, depth + 1) for choice in choices)
            kinds = schema.get("type")
            kinds = [kinds] if isinstance(kinds, str) else kinds
            if kinds is None:
                kinds = [guess_kind(schema)]
            if not isinstance(kinds, list) or not kinds:
                return 1
            if len(kinds) > 1:
                return min(self.least(schema, depth, k) if type(k) is str else 1 for k in kinds)
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
            each = self.least(items, depth + 1) if isinstance(items, dict) else 1
            first = sum(self.least(p, depth + 1) for p in prefix)
            least = 1 + first + (low - len(prefix)) * each
        elif kind == "object":
            low = schema.get("minProperties", 0)
            least = 1 + (min(low, most) if type(low) is int and low > 0 else 0)
            required = schema.get("required")
            properties = schema.get("properties")
            if isinstance(required, list) and isinstance(properties, dict):
                for name in required[:most]:
                    if isinstance(name, str):
                        least += self.least(properties.get(name), depth + 1)
                    if least > most:
                        break
        for part in schema.get("allOf", ()) if isinstance(schema.get("allOf"), list) else ():
            least = max(least, self.least(part, depth + 1))
        return min(least, most)
