"""The plan's process: confined at start, then one plan run, then gone.

Forked by the fork server (``planlang.isolation.zygote``), which started with an empty
environment and imported the sandbox, it confines itself in a fresh scratch directory
(``confine.enter``) and says it is ready, with the layers it has. Then it waits for one
``run``: the checked plan's code (the host checked it; the code comes marshalled from the
host, which this process trusts), the limits and the host's values, in which each host word,
host object and host iterator is a handle. It runs the plan in the in-process ``Sandbox``,
whose meter gives the precise step, size, depth and time errors, and each host call crosses
back to the host as a request; a plan function the host calls back runs on a thread of its
own (``callback_threads``). It answers with the result or the plan error, and exits.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import gc
import itertools
import marshal
import os
import resource
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

from planlang.check import CheckResult
from planlang.errors import PlanError, PlanLimitError
from planlang.isolation import confine, heap_warming, warming
from planlang.isolation.callback_threads import CALLBACK_STACK, CallbackThreads
from planlang.isolation.channel import Endpoint
from planlang.isolation.codec import CodecError
from planlang.isolation.frames import FrameReader, dumps, loads, write_all
from planlang.isolation.lanes import LANES
from planlang.isolation.payload import limits_payload
from planlang.isolation.peer import Peer
from planlang.isolation.wire import HostStop, plan_error
from planlang.sandbox import deep_stack as stack_module
from planlang.sandbox import inprocess as sandbox_module
from planlang.sandbox.deep_stack import MAX_STACK, STACK_MARGIN, stack_for
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits, Meter
from planlang.sandbox.result_line import result_line

__all__ = ["CALLBACK_STACK", "config_without", "serve_one"]

SLACK = 256 * 2**20  # address space beyond the plan's memory limit: the interpreter's own


class _ChildSandbox(Sandbox):
    """The in-process sandbox, given code the host already checked."""

    def __init__(self, checked: CheckResult, **options: Any):
        super().__init__(isolation="inprocess", **options)
        self._given = checked
        self.deadline: float | None = None

    def _checked(self, plan: Any) -> CheckResult:
        return self._given

    def _new_meter(self) -> Meter:
        """The host's clock: the run started when the host sent it (CLOCK_MONOTONIC is the
        same in every process of the machine), so both sides agree on the deadline."""
        meter = Meter(self.limits)
        if self.deadline is not None:
            meter.deadline = min(meter.deadline, self.deadline)
        return meter


# The default limits as the host sends them, and made (by the fork server): most runs have them.
_DEFAULT_LIMITS: list[Any] = []


def _limits(peer: Peer, sent: Any) -> Limits:
    if _DEFAULT_LIMITS and sent == _DEFAULT_LIMITS[0]:
        return _DEFAULT_LIMITS[1]
    return Limits(**peer.decode(sent))


def _code(sent: Any) -> Any:
    """The plan's code, as the host sent it (base64 of marshal)."""
    return marshal.loads(base64.b64decode(sent))  # noqa: S302 - from the host


def _prepare(
    peer: Peer, payload: dict[str, Any], code_sent: Any = None
) -> tuple[_ChildSandbox, CheckResult]:
    """The sandbox for the run the host sent, and its checked plan. Each value was encoded
    on its own, so each is decoded on its own (a reference counts within one value).
    ``code_sent``: the code, loaded from the host's ``go`` (the run then has none)."""
    limits = _limits(peer, payload["limits"])
    sent = payload.get("code")
    code = _code(sent) if sent is not None else code_sent
    if not isinstance(code, types.CodeType):
        raise CodecError("The host sent no code.")
    checked = CheckResult(payload["filename"], payload["sha256"], (), code, frozenset())
    peer.filename = checked.filename
    names, deep = payload.get("names"), payload.get("deep")
    if isinstance(names, list) and isinstance(deep, bool):  # the host's caches, not recomputed
        sandbox_module._used[code] = frozenset(map(str, names))
        stack_module._decisions[code] = deep
    host = {str(name): peer.decode(value) for name, value in payload["host"].items()}
    box = _ChildSandbox(
        checked,
        host=host,
        limits=limits,
        log=peer.print,
        passthrough=(HostStop,),
    )
    deadline = payload.get("deadline")
    if type(deadline) is not float:  # a float is itself; else, say, a tagged infinity
        deadline = peer.decode(deadline)
    box.deadline = float(deadline) if isinstance(deadline, int | float) else None
    return box, checked


def _run(
    peer: Peer, threads: CallbackThreads, payload: dict[str, Any], probes: bool, code: Any = None
) -> tuple[bool, Any]:
    box, checked = _prepare(peer, payload, code)
    limits = box.limits
    deep = stack_for(limits.steps)
    if deep in _PRESTARTED:
        deep = 0  # that thread's stack is in the base already
    # the callback threads' stacks (a tuple nested hundreds of thousands of levels and hashed
    # on one must not crash), as many as the run may start and the lanes', reserved in RLIMIT_AS
    threads.limit_to(limits)
    callbacks = (threads.bound + LANES) * CALLBACK_STACK
    memory = limits.memory_mb * 2**20 + deep + callbacks + SLACK
    confine.limit_resources(cpu_seconds=limits.seconds + 1, memory_bytes=memory, base=_BASE,
                            files=False,  # those were set before ready
                            threads=threads.bound + LANES)  # fmt: skip
    confine.strict()
    probe = payload.get("probe")
    if probe is not None:
        if not probes:
            raise CodecError("This process takes no probes.")
        namespace: dict[str, Any] = {}
        exec(probe, namespace)  # noqa: S102 - tests only: the child was started with probes on
        _ended(peer)
        return True, [peer.encode(namespace.get("result")), 0]
    try:
        result = box.run(checked)
    except HostStop:
        return False, ["passthrough", None, None, None, None]
    except PlanError as error:
        return False, plan_error(error)
    _ended(peer)
    try:
        meter = box.last_meter
        return True, [peer.encode(result), meter.steps if meter is not None else 0]
    except RecursionError:
        return False, plan_error(PlanLimitError("depth", "The plan's result nests too deeply."))
    except TypeError as error:  # CodecError too; past the plan's lines: what wrote the result
        line = result_line(checked.code)
        return False, ["runtime", "TypeError", str(error), line, checked.filename]


def _ended(peer: Peer) -> None:
    """Tell the host the plan ended, before its result is encoded and sent: the host holds
    the plan to its time limit by this moment, not by its answer's arrival (parent.run).
    A notice to the host as a whole (no context): served by whichever thread reads it, where
    one to the run would move the run's answer to a thread of the host's (its first call's)."""
    if peer.endpoint is not None:
        peer.endpoint.send(["n", None, "done", None])


def default_limits_sent() -> Any:
    """``Limits()`` as a host sends it (``payload.limits_payload``), read back from JSON."""
    return loads(dumps(limits_payload(Limits())))


def config_without(config: dict[str, Any]) -> tuple[str, ...]:
    return tuple(config.get("without") or ()) if config.get("probes") else ()


# The fork server's warm-up plans. A fork shares the server's memory until it first writes a
# page, and running a plan writes (reference counts) to thousands of pages, each then copied:
# about 1.5 ms of a one-line plan's run. A fork runs these once it is ready, while it waits in
# the pool (``warming``), so that copying is not on a run's path. Kept as the host would send
# their runs (JSON bytes, less the deadline), made once by the server.
_WARM_RUNS: list[bytes] = []


_BASE: list[float] = []  # (CPU seconds, address space) used once warm: what the limits add to
_PRESTARTED: list[int] = []  # the stack size of the deep-stack thread started before ready


def _warm() -> None:
    """Before ready: the first warm-up plan, the stack a plan runs on, and what the process
    uses: the base its per-plan limits are counted from (counted again once it has warmed:
    ``serve_one``)."""
    if _WARM_RUNS:
        warm_run(_WARM_RUNS[0])
    # A plan with a loop runs on the main thread, whose stack the fork server's start made
    # deep enough (boot.py; the stack grows, within the address-space limit, as it is used).
    # Where it could not, the deep-stack thread for the default limits is started now (its
    # stack is then part of the base the memory limit adds to).
    soft, _hard = resource.getrlimit(resource.RLIMIT_STACK)
    room = MAX_STACK if soft == resource.RLIM_INFINITY else soft - STACK_MARGIN
    stack_module.main_thread_stack(room)
    stack = stack_for(Limits().steps)
    if stack > room:
        stack_module._idle.setdefault(stack, []).append(stack_module._DeepThread(stack))
        _PRESTARTED[:] = [stack]
    # threads made from here on (the plan's callbacks) reserve this much, counted below; the
    # default would be the main thread's RLIMIT_STACK
    threading.stack_size(CALLBACK_STACK)
    _BASE[:] = confine.used()
    confine.limit_files()  # the same for every plan: set now, off the run's path
    warming.ignore_taken()


def warm_up_with(plans: list[CheckResult]) -> None:
    """In the fork server, once: the warm-up plans' runs as a host sends them (less the
    deadline), and the default limits as sent and made, so a fork only reads them."""
    _DEFAULT_LIMITS[:] = [default_limits_sent(), Limits()]
    _WARM_RUNS[:] = []
    for checked in plans:
        assert checked.code is not None
        _WARM_RUNS.append(dumps({
            "code": base64.b64encode(marshal.dumps(checked.code)).decode("ascii"),
            "filename": checked.filename, "sha256": checked.sha256,
            "limits": Peer().encode(dataclasses.asdict(Limits(seconds=30))),
            "host": {"word": {"w": 1}},
            "names": sorted(sandbox_module.used_names(checked.code)), "deep": False,
        }))  # fmt: skip


def warm_run(sent: bytes) -> None:
    """Run one warm-up plan as the host would send it (its host word answered here). What
    its functions' cycles hold is collected at once: no warm-up sandbox outlives its step."""
    peer = Peer()
    payload = loads(sent)
    payload["deadline"] = time.monotonic() + 30
    box, again = _prepare(peer, payload)
    box.host["word"] = lambda a, b=0: {"a": a, "b": b}
    make_meter = box._new_meter
    box._new_meter = lambda: warming.metered(make_meter())  # type: ignore[method-assign]
    try:
        result = peer.encode(box.run(again))
        peer.decode(loads(dumps(["a", 1, True, [result, 0]]))[3][0])
    except BaseException as error:  # a run took this process and stopped the plan
        # (``warming``): no frame of it is kept, so its sandbox goes with its last reference
        # here, with no collection on the run's path
        warming.forget_frames(error)
        raise
    finally:
        del box._new_meter  # no cycle through it either
        del box, again
    gc.collect()  # not when taken: the run waits for nothing


def _warm_steps() -> Iterator[Callable[[], object]]:
    """What a ready process runs while it waits (``warming``): each warm-up plan but the
    first (run before ready: what every run touches, so a process that a busy machine left
    no idle CPU to warm in still runs a plan as warm as before), then the heap's steps
    (``heap_warming``: the pages a run's allocations and names would copy)."""
    for sent in _WARM_RUNS[1:]:
        yield functools.partial(warm_run, sent)
    yield from heap_warming.steps()


def serve_one(config: dict[str, Any], read_fd: int, write_fd: int, layers: list[Any],
              lanes: list[tuple[int, int]] | None = None) -> None:  # fmt: skip
    """Say ready with the layers, run the one plan the host sends, answer, exit. All that
    does not depend on the run is made while this process waits (``warming``: its channel
    first), or at once if a run takes it first; a run's host says ``go`` as it takes this
    process, so it wakes (a sleeping CPU can take 150 µs) while the host makes the run."""
    _warm()
    write_all(write_fd, ["ready", [layer.as_list() for layer in layers], os.getpid()])
    made: list[tuple[FrameReader, Peer, CallbackThreads, Endpoint]] = []

    def make() -> None:
        made.append(_channel(read_fd, write_fd, lanes))

    if warming.warm_while_waiting(read_fd, itertools.chain([make], _warm_steps())):
        _BASE[:] = confine.used()  # counted again: warming grew its heap
    reader, peer, threads, endpoint = made[0] if made else _channel(read_fd, write_fd, lanes)
    message = reader.read(spin=False)  # asleep in the pool: polling would take a CPU
    code = None
    if message and message[0] == "go":
        if len(message) > 1:  # the run's code, loaded while the host makes the run
            try:
                code = _code(message[1])
            except Exception:  # noqa: BLE001 - the run that needs it says so (no code)
                code = None
        message = reader.read()  # the run, on its way: polled for
    if not message or message[0] != "q" or message[3] != "run":
        os._exit(2)
    rid = message[1]
    endpoint.default_context = rid
    # a callback the process cannot run ends the run at once, whatever the host words wait on
    threads.refuse = lambda error: _answer(endpoint, rid, False, plan_error(error))
    try:
        ok, answer = _run(peer, threads, message[4], bool(config.get("probes")), code)
    except BaseException as error:  # noqa: BLE001 - the host hears of every failure
        ok, answer = False, ["runtime", type(error).__name__, str(error)[:2000], None, None]
    _answer(endpoint, rid, ok, answer)


def _channel(read_fd: int, write_fd: int, lanes: list[tuple[int, int]] | None
             ) -> tuple[FrameReader, Peer, CallbackThreads, Endpoint]:  # fmt: skip
    """The run's channel to the host, and what serves the host's requests on it."""
    reader = FrameReader(read_fd, 2**31)
    peer = Peer()
    peer.lanes = list(lanes or ())
    threads = CallbackThreads()
    endpoint = Endpoint(reader, write_fd, threads.serving(peer.serve), peer.notice,
                        spare=threads)  # fmt: skip
    peer.endpoint = endpoint
    return reader, peer, threads, endpoint


_ANSWERED = threading.Lock()  # taken by the one thread that answers the run, never let go


def _answer(endpoint: Endpoint, rid: int, ok: bool, answer: Any) -> None:
    """Answer the run and exit, from whichever thread ends it first (the run's own, or one
    that refused a callback); a second waits here until the process is gone."""
    _ANSWERED.acquire()
    try:
        endpoint.send(["a", rid, ok, answer])
    finally:
        step_aside()
        sys.stderr.flush()
        os._exit(0)


_IDLE_POLICY = getattr(os, "SCHED_IDLE", None)
_IDLE_PARAM = os.sched_param(0)


def step_aside() -> None:
    """Idle priority for what is left: the exit, whose tearing down of this process's memory
    takes a millisecond or more. The host, woken by the answer, is often woken on this very
    CPU (a pipe's wake-up tells the kernel that the writer is about to sleep), and at the
    usual priority it would wait for the exit (1.4 ms on a one-line plan here, unpinned)."""
    if _IDLE_POLICY is not None:
        try:
            os.sched_setscheduler(0, _IDLE_POLICY, _IDLE_PARAM)
        except OSError:  # a kernel without it: the exit runs as it did
            pass
