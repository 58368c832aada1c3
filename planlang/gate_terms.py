"""What an approval holds for, and what a run of it may do: the terms a plan was priced and
decided under (the policy, the settings a price depends on, the inputs), digested the same way
in every process, and the checks that hold its run to them (its spending settings, the writes
of tools it was approved for). ``planlang.gate`` seals and issues; this says what is sealed.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from planlang.errors import OtherTerms

if TYPE_CHECKING:
    from planlang.gate import Policy
    from runtime import Run

__all__ = ["PRICED_SETTINGS", "same_spending", "terms_sha", "write_bound"]


# The settings a price depends on: what each call costs, how many workers and turns a run may
# have (the hard ceiling), how many tool calls, and how many calls at once (the wall time).
PRICED_SETTINGS = frozenset({
    "roles", "default_model", "default_price", "concurrency", "max_agents", "max_tool_calls",
    "max_repair_turns", "max_check_retries", "response_format",
})  # fmt: skip


def terms_sha(policy: Policy, settings: Any, inputs: Any) -> str:
    """What an approval holds for: the policy, and the settings and inputs the plan was priced
    under. The same source under another role price, ``max_agents`` or another inputs file is
    another price, so its approval is not the old one's (``planlang run`` prices it again)."""
    from runtime import Settings

    priced = (settings if settings is not None else Settings()).model_dump(
        mode="json", include=set(PRICED_SETTINGS))  # fmt: skip
    # JSON's inputs (a file's, every CLI and MCP approval) as JSON; any other as ``_tagged``
    # says it, so two inputs a plan can tell apart never share a digest (review 24)
    shown = inputs if _json_native(inputs) else {"tagged": _tagged(inputs, frozenset())}
    body = {"policy": policy.model_dump(mode="json"), "settings": priced, "inputs": shown}
    text = json.dumps(body, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _json_native(value: Any) -> bool:
    """Whether ``value`` is what ``json.loads`` makes (text keys only), without a cycle."""
    stack, seen = [value], set()
    while stack:
        one = stack.pop()
        kind = type(one)
        if one is None or kind in (str, int, float, bool):
            continue
        if kind not in (dict, list) or id(one) in seen:
            return False  # a tuple, set, bytes, object; met twice (maybe a cycle)
        seen.add(id(one))
        if kind is dict:
            if not all(type(k) is str for k in one):
                return False  # int keys: json.dumps would make them text
            stack.extend(one.values())
        else:
            stack.extend(one)
    return True


def _tagged(value: Any, within: frozenset[int]) -> Any:
    """Inputs that are not JSON's, for the terms' digest: each value with its kind, a dict's
    items and a set's members in the order of their own text (never of hashes), an object by
    its class, the same in every process; a value that holds itself names the cycle."""
    if value is None or isinstance(value, bool | int | float | str):
        return [type(value).__name__, value]
    if id(value) in within:
        return ["cycle"]
    within = within | {id(value)}
    if isinstance(value, dict):
        items = [[_tagged(k, within), _tagged(v, within)] for k, v in value.items()]
        return ["dict", sorted(items, key=_sort_key)]
    if isinstance(value, list | tuple):
        return [type(value).__name__, [_tagged(item, within) for item in value]]
    if isinstance(value, set | frozenset):
        return ["set", sorted((_tagged(item, within) for item in value), key=_sort_key)]
    if isinstance(value, bytes | bytearray):
        return ["bytes", bytes(value).hex()]
    return ["object", f"{type(value).__module__}.{type(value).__qualname__}"]


def _sort_key(tagged: Any) -> str:
    return json.dumps(tagged, ensure_ascii=False)


# What bounds a run's spending (the hard ceiling is max_agents x turns x the dearest price, and
# tool calls at their price): the priced settings but the wall time's and the answers' format.
# A run that differs in any of these is not the run that was priced.
_SPENDING = tuple(sorted(PRICED_SETTINGS - {"concurrency", "response_format"}))


def same_spending(priced: Any, run: Run) -> None:
    """Raise ``OtherTerms`` unless ``run`` (its own settings, its LLM's, its ``max_agents``)
    spends by the settings the plan was priced under (red team 24b: priced at 0.01 a call, run
    at 5)."""
    from runtime import Settings

    want = (priced if priced is not None else Settings()).model_dump(
        mode="json", include=set(_SPENDING)
    )
    for where, settings in (("the run's", run.settings), ("its LLM's", run.llm.settings)):
        have = settings.model_dump(mode="json", include=set(_SPENDING))
        for key in _SPENDING:
            if have[key] != want[key]:
                raise OtherTerms(
                    f"{key} is {_short(want[key])} in the price, "
                    f"{_short(have[key])} in {where} settings; price it again"
                )
    if run.max_agents > want["max_agents"]:
        raise OtherTerms(f"max_agents is {want['max_agents']} in the price, {run.max_agents} in "
                         f"the run; price it again")  # fmt: skip


def write_bound(policy: Policy, priced: dict[str, Any]) -> int | None:
    """The calls of tools that are not read-only a run of this plan may send: the policy's
    ``max_tool_writes``, or more where a person let the plan go past it having seen more in
    its price (the rehearsals' writes, each tool at its most); none where the price could not
    say (a write the code names that no rehearsal called, approved by a person)."""
    bound = policy.max_tool_writes
    if bound is None:
        return None
    hints = priced.get("tool_hints") or {}
    writing = {name for name in hints if not hints[name].get("read_only", False)}
    tools = priced.get("tools") or {}
    seen = sum(int(tools[name]["calls"]["max"]) for name in writing & set(tools))
    called = {name for name in tools if tools[name]["calls"]["max"] > 0}
    if any(name in writing and name not in called for name in priced.get("tools_named") or ()):
        return None
    return max(bound, seen)


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 60 else text[:57] + "..."
