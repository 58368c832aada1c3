"""What a run sends of its plan's code and its limits: the same for every run of one plan,
so made once (the host caches them; a plan process reads them as the host made them)."""

from __future__ import annotations

import base64
import dataclasses
import functools
import marshal
import types
from typing import Any

from planlang.errors import a_kind
from planlang.isolation.codec import CodecError, Encoder
from planlang.sandbox.deep_stack import needs_deep_stack
from planlang.sandbox.inprocess import used_names
from planlang.sandbox.limits import Limits

__all__ = ["code_payload", "limits_payload"]


@functools.lru_cache(maxsize=128)
def code_payload(code: types.CodeType, filename: str) -> tuple[str, list[str], bool]:
    """The code marshalled (as ASCII), the names it uses, whether it needs a deep stack.
    Keyed by the filename too: code objects compare equal whatever file they name."""
    marshalled = base64.b64encode(marshal.dumps(code)).decode("ascii")
    return marshalled, sorted(used_names(code)), needs_deep_stack(code)


@functools.lru_cache(maxsize=32)
def limits_payload(limits: Limits) -> Any:
    """The limits as the codec's plain data."""
    return Encoder(_no_handles).encode(dataclasses.asdict(limits))


def _no_handles(value: Any) -> Any:
    raise CodecError(f"{a_kind(type(value).__name__, capital=True)} is not a limit.")
