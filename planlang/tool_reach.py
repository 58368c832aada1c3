"""Which declared tools a plan can reach, read from its code rather than from its rehearsals.

The gate's tool policy (``hold_destructive``, ``max_tool_writes``) counted the calls the
rehearsals made, and a plan can tell a stand-in's answer from a real one: one that calls a
destructive tool only when a read-only tool's answer is not the stand-in's was approved, then
dropped and wrote (red team 24b). A plan reaches a method by its literal name only (no
``getattr``, no ``vars``), and the check leaves every attribute it reads in the code as a name
or a string constant (``_getattr_(t, "drop")``). So a tool whose call word appears nowhere in
the code cannot be called, and one whose word does may be: over-approximated (a text that
happens to be the word counts too), which holds a plan a person then reads, never lets one go.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any

__all__ = ["code_words", "reachable_tools"]


def code_words(code: types.CodeType) -> frozenset[str]:
    """Every name and text constant in ``code`` and the code objects it holds."""
    found: set[str] = set()
    stack = [code]
    while stack:
        one = stack.pop()
        found.update(one.co_names)
        for const in one.co_consts:
            if type(const) is str:
                found.add(const)
            elif type(const) is types.CodeType:
                stack.append(const)
            elif type(const) is tuple or type(const) is frozenset:
                found.update(item for item in const if type(item) is str)
    return frozenset(found)


def reachable_tools(
    code: types.CodeType | None, hints: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """The declared tools (``server.tool``) whose server and call word both appear in ``code``."""
    if code is None or not hints:
        return []
    from planlang.mcp.tools import word_name  # the SDK stays unimported: only the naming rule

    words = code_words(code)
    reached = []
    for name in hints:
        server, _, tool = name.partition(".")
        if server in words and word_name(tool) in words:
            reached.append(name)
    return sorted(reached)
