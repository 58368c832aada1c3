"""A deep C stack for plan code.

CPython 3.11 hashes a tuple by recursing in C with no depth check, so a plan that nests a tuple
a few hundred thousand levels deep (``t = (t,)`` in a loop) and hashes it would overflow an
ordinary 8 MB thread stack and kill the host with SIGSEGV. Each level costs the plan a step, so
``Limits.steps`` bounds the depth; the sandbox runs any plan that can loop on a thread whose
stack fits that bound (the stack is reserved, not used: untouched pages cost no memory).
Straight-line plans without loops, functions or comprehensions run inline, as they cannot nest
that deep, so a one-line plan pays nothing for this.
"""

from __future__ import annotations

import dis
import queue
import threading
import types
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = [
    "deep_settings",
    "instructions",
    "main_thread_stack",
    "needs_deep_stack",
    "run_on_deep_stack",
    "stack_for",
]

T = TypeVar("T")

# Measured on CPython 3.11, x86_64: about 64 bytes of C stack per level of tuple hashing; the
# factor leaves room for other C recursion on the way.
BYTES_PER_STEP = 96
MIN_STACK = 64 * 2**20
MAX_STACK = 2**30
STACK_MARGIN = 64 * 2**20  # of a main thread's stack: for the frames beneath the plan's
_STRAIGHT_LINE_LIMIT = 4096  # bytes of bytecode a loop-free plan may have and still run inline

_LOCK = threading.Lock()  # guards the pool of idle deep threads
_decisions: weakref.WeakKeyDictionary[types.CodeType, bool] = weakref.WeakKeyDictionary()
_BACKWARD = {op for name, op in dis.opmap.items() if "BACKWARD" in name}


def stack_for(steps: int) -> int:
    """The stack a plan with this step limit needs, in bytes (whole MiB)."""
    size = min(max(steps * BYTES_PER_STEP, MIN_STACK), MAX_STACK)
    return -(-size // 2**20) * 2**20


def deep_settings(settings: Any, steps: int) -> Any:
    """``settings`` (a ``runtime.Settings``) whose run threads get a stack that fits ``steps``,
    unless the embedder chose a size already: plan thunks run on the run's worker threads."""
    if getattr(settings, "thread_stack_mb", None) is not None:
        return settings
    return settings.model_copy(update={"thread_stack_mb": stack_for(steps) // 2**20})


def instructions(code: types.CodeType) -> list[dis.Instruction]:
    """``code``'s instructions, as ``dis`` reads them, without the text of its constants:
    ``dis`` makes a repr of each, and a plan's constant may be a hex literal of a million
    digits (a 4-million-bit int, whose decimal repr raises past ``int_max_str_digits``, or takes
    quadratic time where a host set that to 0). Nothing here reads a constant's value."""
    blank = code.replace(co_consts=(None,) * len(code.co_consts))
    return list(dis.get_instructions(blank))


def needs_deep_stack(code: types.CodeType) -> bool:
    """True unless the plan is straight-line code: no loop, no nested code, and short."""
    decided = _decisions.get(code)
    if decided is None:
        decided = (
            len(code.co_code) > _STRAIGHT_LINE_LIMIT
            or any(isinstance(const, types.CodeType) for const in code.co_consts)
            or any(i.opcode in _BACKWARD for i in instructions(code))
        )
        _decisions[code] = decided
    return decided


class _DeepThread:
    """A daemon thread with a deep stack that runs one job at a time, kept for reuse: starting
    a thread costs far more than handing it work, and plans are run again and again."""

    def __init__(self, stack: int):
        # threading.stack_size is process-wide: the runtime's one lock guards every change of
        # it, so a run's worker thread and this one never start at each other's size (imported
        # here, not above: checking a plan never starts a thread, and never loads the runtime).
        from runtime.stacks import thread_stack

        self.jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        with thread_stack(stack // 2**20):
            thread = threading.Thread(target=self._serve, name="planlang-plan", daemon=True)
            thread.start()

    def _serve(self) -> None:
        while True:
            self.jobs.get()()


_idle: dict[int, list[_DeepThread]] = {}  # stack size -> threads waiting for work
_MAX_IDLE = 4
_main_stack = [0]  # bytes of stack a plan may use on this process's main thread


def main_thread_stack(size: int) -> None:
    """Say that this process's main thread may use ``size`` bytes of stack (a plan's process,
    started with RLIMIT_STACK raised for it): plans that fit run on it, with no thread."""
    _main_stack[0] = max(0, size)


def run_on_deep_stack(work: Callable[[], T], stack: int, on_interrupt: Callable[[], Any]) -> T:
    """Call ``work()`` on a thread with a ``stack``-byte stack; return or raise its outcome.

    Ctrl-C while waiting calls ``on_interrupt`` (which must make ``work`` stop soon), waits
    for the work to end, and raises ``KeyboardInterrupt``. On a main thread whose stack is
    known to fit (``main_thread_stack``), ``work`` runs right there.
    """
    if stack <= _main_stack[0] and threading.current_thread() is threading.main_thread():
        return work()
    with _LOCK:
        pool = _idle.setdefault(stack, [])
        worker = pool.pop() if pool else None
    if worker is None:
        worker = _DeepThread(stack)
    done: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()

    def job() -> None:
        try:
            done.put((True, work()))
        except BaseException as error:  # noqa: BLE001 - handed back to the caller's thread
            done.put((False, error))

    worker.jobs.put(job)
    interrupted = False
    while True:
        try:
            ok, value = done.get()
            break
        except KeyboardInterrupt:
            interrupted = True
            on_interrupt()
    with _LOCK:
        if len(_idle[stack]) < _MAX_IDLE:
            _idle[stack].append(worker)
        else:
            worker.jobs.put(_stop)
    if interrupted:
        raise KeyboardInterrupt
    if not ok:
        raise value
    return value


def _stop() -> None:
    raise SystemExit  # ends a surplus worker thread quietly
