"""The few system calls the confinement makes through libc, and what a layer reports.

Kept apart so each layer's module (``confine``, ``seccomp``) uses them without importing the
other.
"""

from __future__ import annotations

import ctypes
import os
import platform
from dataclasses import dataclass
from typing import Any

__all__ = ["Layer"]


@dataclass(frozen=True)
class Layer:
    name: str
    active: bool
    detail: str

    def as_list(self) -> list[Any]:
        return [self.name, self.active, self.detail]


_X86_64 = platform.machine() == "x86_64"
_libc: Any = None


def _syscall(number: int, *args: Any) -> int:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    result = int(_libc.syscall(ctypes.c_long(number), *args))
    if result < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return result


def _prctl(option: int, arg: Any) -> None:
    _syscall(157, ctypes.c_int(option), arg, ctypes.c_ulong(0), ctypes.c_ulong(0),
             ctypes.c_ulong(0))  # fmt: skip
