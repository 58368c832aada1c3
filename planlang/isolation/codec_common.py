"""What the codec's tree (``codec``) and its tables (``codec_tables``) share: the error a
value that cannot cross raises, the kinds that are containers, and the marks of a container
not yet made."""

from __future__ import annotations

import types

__all__ = ["CodecError"]

_FUNCTION = types.FunctionType  # a plan's function (a thunk): a handle, never adapted
_CONTAINERS = frozenset({list, dict, tuple, set, frozenset})


class CodecError(TypeError):
    """A value that cannot cross, or a frame that is not what the protocol allows."""


class _Pending:
    __slots__ = ()


_PENDING = _Pending()  # a tuple (or set) of the value, not made yet: it is still being read

_HOLDS_ITSELF = "A tuple or set that holds itself other than through a list or dict cannot cross."
