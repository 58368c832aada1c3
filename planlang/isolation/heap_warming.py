"""The memory a run writes, written while a ready process waits (``warming``'s last steps).

A process that ran the warm-up plans still took about 85 page faults on the compute-glue
plan's run path (``ru_minflt``; 4.5-5 µs each in this VM, measured in a plan process: some
0.4 ms of a 3.7 ms run). Its allocations landed on pages of the fork server's heap it had
not written yet, each then copied, or on new ones; each new name of the plan's code went
into the interpreter's table of interned strings, copying the page of that table its slot
fell on; and the run's own path (not a warm-up plan's) ran frozen code of the interpreter's
(``abc``, ``codecs``, ``importlib``), whose code objects are written as they run, in the
interpreter's writable segment. So these steps write that segment ahead, a few pages at a
time (``MADV_POPULATE_WRITE``), make what plans usually make (short strings, small dicts, a
block of each of the allocator's sizes; a few long lists, dicts and texts) and intern names,
a little at a time, then free it all: the pages are this process's own from then on, and a
run's allocations find them in the allocator's free lists. The compute-glue plan's run
path: about 84 faults before, 25 after (side by side, load 3.5). A run that takes the
process meanwhile finds what the steps made still held, as garbage it does not pay for (the
process ends with its run).
"""

from __future__ import annotations

import ctypes
import functools
import mmap
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["learn", "steps"]

CHUNK = 250  # objects of each kind a step makes (about 0.2 ms: a run waits for little)
CHUNKS = 24  # steps of them: about 3 MB held at once
NAMES = 500  # names a step interns
NAME_STEPS = 6

_held: list[Any] = []

# The interpreter's writable segment (its deep-frozen code objects, its static objects): a run
# writes pages of it no warm-up plan does (the frozen ``abc``, ``codecs``, ``importlib`` code
# the run's own path runs, about 16 pages), so they are written ahead, a few at a time, with
# ``MADV_POPULATE_WRITE`` (Linux 5.14): ``learn`` finds it in the fork server.
MADV_POPULATE_WRITE = 23
PAGES_A_STEP = 32  # about 0.15 ms
_interpreter: list[tuple[int, int]] = []
_madvise: list[Any] = []


def learn() -> None:
    """In the fork server, once: where the interpreter's writable segment is, and libc's
    ``madvise``. Nothing is learned (and nothing written ahead) where either is missing."""
    executable = os.path.realpath(sys.executable)
    try:
        with open("/proc/self/maps") as maps:
            lines = maps.read().splitlines()
        madvise = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return
    madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    madvise.restype = ctypes.c_int
    ranges = []
    for line in lines:
        parts = line.split(maxsplit=5)
        if (
            len(parts) == 6
            and parts[1] == "rw-p"
            and ("libpython" in os.path.basename(parts[5]) or parts[5] == executable)
        ):
            low, high = (int(edge, 16) for edge in parts[0].split("-"))
            ranges.append((low, high))
    _interpreter[:] = ranges
    _madvise[:] = [madvise]


def _write_ahead(low: int, high: int) -> None:
    _madvise[0](low, high - low, MADV_POPULATE_WRITE)  # refused (an old kernel): nothing lost


def _make(start: int) -> None:
    """Short strings, small dicts and blocks of each of the allocator's sizes. None of them
    is tracked by the collector (a dict of strings and ints is not): so many held would
    otherwise start collections here, and one on the run's path if a run took the process
    before they were freed."""
    strings = [f"w{n}" for n in range(start, start + CHUNK)]
    _held.append(strings)
    _held.append([{"name": s, "count": n, "sum": n * 7} for n, s in enumerate(strings)])
    _held.append([bytes(size) for size in _SIZES for _ in range(_EACH)])


_SIZES = range(1, 512, 16)  # a bytes object of each of pymalloc's size classes, about
_EACH = 8


def _large() -> None:
    _held.append([list(range(k)) for k in (64, 256, 1024, 4096)])
    _held.append([{n: n for n in range(k)} for k in (64, 512, 2048)])
    _held.append([", ".join(map(str, range(k))) for k in (100, 1000, 3000)])


def _names(start: int) -> None:
    _held.append([sys.intern(f"_warm_name_{n}") for n in range(start, start + NAMES)])


def _free() -> None:
    del _held[-_FREED:]


_FREED = 3  # parts a step frees
_PARTS = CHUNKS * 3 + 3 + NAME_STEPS  # parts the steps make: ``_make`` 3, ``_large`` 3


def steps() -> Iterator[Callable[[], object]]:
    """The interpreter's pages, then the heap's: each step writes some pages or makes a
    part, then each frees some (``warming.warm_while_waiting`` runs them one at a time, at
    idle priority, until a run takes the process)."""
    if _madvise:
        size = PAGES_A_STEP * mmap.PAGESIZE
        for low, high in _interpreter:
            for start in range(low, high, size):
                yield functools.partial(_write_ahead, start, min(high, start + size))
    for chunk in range(CHUNKS):
        yield functools.partial(_make, chunk * CHUNK)
    yield _large
    for part in range(NAME_STEPS):
        yield functools.partial(_names, part * NAMES)
    for _ in range(-(-_PARTS // _FREED)):
        yield _free
