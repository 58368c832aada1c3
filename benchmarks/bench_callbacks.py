"""What one callback through a fan-out word costs each side under process isolation, in
instructions (issue 12).

The callback workload (``plans/callback_fanout.py``) hands plan lambdas to an embedder's
fan-out word, which calls each back; each calls ``agent``. Under isolation a callback is four
frames on a lane (``isolation/lanes.py``): the host asks for the callback, the plan's process
asks for ``agent``, the host answers, the plan's process answers the callback; with tails,
two: the plan's process asks for ``agent`` as a tail, and the host takes its answer as the
callback's. As in
``bench_crossing.py``, each side runs alone in one process under callgrind, against the other
side's frames written ahead into a packet pipe (each read returns one frame), so nothing waits
and only that side's own work is counted:

- the plan's side: the real ``child._prepare`` sandbox and ``Peer``, its lane's thread started
  by the host's notice, running a plan that builds N thunks and hands them to ``fan_out``;
- the host's side: the real ``parent._Session`` serving that plan's ``fan_out`` call, whose
  word calls each plan function back (on one thread of its own, so on a lane);
- beside them, the same plan in-process and in plain CPython, with the same ``fan_out``.

One callback costs ``(Ir(N) - Ir(0)) / N`` (the whole plan: building the thunk, handing it
over, the callback, its reply summed), both after a run of one callback, less what writing
the frames ahead and draining the other pipes cost (``ahead-child``, ``ahead-host``). System
calls and wake-ups are not counted: ``bench_isolation.py`` measures those, in wall time.

    python benchmarks/bench_callbacks.py [--calls 100] [--out benchmarks/RESULTS.md]
    python benchmarks/bench_callbacks.py --child SIDE N   (what callgrind runs)
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import fcntl
import functools
import marshal
import os
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import callgrind  # noqa: E402
from results_block import write_block  # noqa: E402

HERE = Path(__file__).resolve().parent
SIDES = ("cpython", "inprocess", "child", "host", "ahead-child", "ahead-host")
_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ
MOST = 120  # callbacks a run: a lane's packet pipe of 1 MiB holds 256 frames, two a callback
_ONE = ThreadPoolExecutor(1, thread_name_prefix="bench-fan-out")


def fan_out(thunks: list[Callable[[], Any]]) -> list[Any]:
    """The embedder's fan-out word, on one thread of its own (it serves nothing, so each
    callback goes on a lane), calling the thunks one after another: nothing waits."""
    return _ONE.submit(lambda: [thunk() for thunk in thunks]).result()


def _packet_pipe() -> tuple[int, int]:
    read, write = os.pipe2(os.O_DIRECT)
    fcntl.fcntl(write, _SETPIPE_SZ, 1 << 20)
    return read, write


def _pipe() -> tuple[int, int]:
    """A pipe only written here, drained at the end (its frames are not read one by one)."""
    read, write = os.pipe()
    fcntl.fcntl(write, _SETPIPE_SZ, 1 << 20)
    return read, write


def _frames(messages: list[Any]) -> list[bytes]:
    from planlang.isolation.frames import _HEADER, dumps

    return [_HEADER.pack(len(body), time.monotonic()) + body for body in map(dumps, messages)]


def _write(fd: int, messages: list[Any]) -> None:
    for frame in _frames(messages):
        os.write(fd, frame)


def _drain(fd: int) -> None:
    os.set_blocking(fd, False)
    try:
        while os.read(fd, 1 << 20):
            pass
    except BlockingIOError:
        pass


def _read_all(fd: int) -> bytes:
    os.set_blocking(fd, False)
    data = b""
    try:
        while chunk := os.read(fd, 1 << 20):
            data += chunk
    except BlockingIOError:
        pass
    return data


def _plan(calls: int) -> str:
    return (f"thunks = []\nfor n in range({calls}):\n"
            "    thunks.append(lambda t=n: agent('coder', f'Round 1: task-{t} as coder.'))\n"
            "replies = fan_out(thunks)\ntotal = 0\nfor reply in replies:\n"
            "    total = total + reply['tokens']\nresult = total\n")  # fmt: skip


def _prompt(n: int) -> str:
    return f"Round 1: task-{n} as coder."


@functools.cache
def _reply(n: int) -> dict[str, Any]:
    import bench_planlang as bench

    return bench.agent("coder", _prompt(n))


def _no_polling() -> None:
    """Readers sleep at once: a side waiting for its own other thread polls for nothing."""
    from planlang.isolation import frames

    frames._SPINS = False  # type: ignore[attr-defined]
    frames.SPIN = 0.0


# -- the plan's side ---------------------------------------------------------------------


@functools.cache
def _tails() -> bool:
    """Whether this copy of planlang takes a callback's last host call as its answer (two
    frames a callback, not four: ``lanes.TAIL``), so the two copies can be compared."""
    from planlang.isolation import lanes

    return hasattr(lanes, "TAIL")


def _host_frames_to_child(calls: int) -> tuple[list[Any], list[Any], list[Any]]:
    """What the host sends: on the run's channel, the lane's notice; on the lane, each
    callback (and, without tails, the answer to its ``agent`` call); then, on the channel,
    ``fan_out``'s answer."""
    lane: list[Any] = []
    for n in range(calls):
        lane.append(["q", n + 1, None, "callback", [n + 1, [], {"d": []}]])
        if not _tails():
            lane.append(["p", n + 1, _reply(n)])
    return [["n", None, "lane", 0]], lane, [["p", 1, [_reply(n) for n in range(calls)]]]


def _side_child(calls: int) -> None:
    import planlang
    from planlang.isolation import child as plan_process
    from planlang.isolation import peer as peer_module
    from planlang.isolation.channel import Endpoint
    from planlang.isolation.frames import FrameReader, dumps, loads
    from planlang.sandbox.inprocess import used_names

    _no_polling()
    checked = planlang.check(_plan(calls))
    assert checked.code is not None
    peer = peer_module.Peer()
    payload = {
        "code": base64.b64encode(marshal.dumps(checked.code)).decode("ascii"),
        "filename": checked.filename, "sha256": checked.sha256,
        "limits": peer.encode(dataclasses.asdict(planlang.Limits(seconds=3600))),
        "host": {"agent": {"w": 1}, "fan_out": {"w": 2}},
        "deadline": peer.encode(time.monotonic() + 3600),
        "names": sorted(used_names(checked.code)), "deep": False,
    }  # fmt: skip
    box, again = plan_process._prepare(peer, loads(dumps(payload)))
    notice, lane, answer = _host_frames_to_child(calls)
    channel_in, channel_out = _packet_pipe(), _pipe()
    lane_in, lane_out = _packet_pipe(), _pipe()
    _write(channel_in[1], notice)
    _write(lane_in[1], lane)
    os.close(lane_in[1])  # the lane's thread ends at the end of its frames
    peer.lanes = [(lane_in[0], lane_out[1])]
    serve_lane = peer._serve_lane

    def served(read_fd: int, write_fd: int) -> None:
        serve_lane(read_fd, write_fd)
        _write(channel_in[1], answer)  # fan_out answers once every callback has run

    peer._serve_lane = served  # type: ignore[method-assign]
    peer.endpoint = Endpoint(FrameReader(channel_in[0]), channel_out[1], peer.serve,
                             peer.notice, default_context=0)  # fmt: skip
    result = box.run(again)
    assert result == sum(_reply(n)["tokens"] for n in range(calls)), result
    _drain(channel_out[0])
    asked = _read_all(lane_out[0])
    assert asked.count(b'"tail"' if _tails() else b'"call"') == calls, asked[-300:]


def _ahead_child(calls: int) -> None:
    notice, lane, answer = _host_frames_to_child(calls)
    _ahead(notice + lane + answer, (1 if _tails() else 2) * calls + 1)


# -- the host's side ---------------------------------------------------------------------


def _child_frames_to_host(calls: int) -> tuple[list[Any], list[Any]]:
    """What the plan's process sends: on the channel, its ``fan_out`` call (request 100 of
    the run, which is request 1; ``agent`` is handle 1, ``fan_out`` 2), then the run's answer;
    on the lane, each callback's ``agent`` call (a tail call, where this copy has them) and,
    without tails, the callback's answer."""
    handles = [{"c": n + 1} for n in range(calls)]
    total = sum(_reply(n)["tokens"] for n in range(calls))
    channel = [["q", 100, 1, "call", [2, [handles], {"d": []}, 4]], ["a", 1, True, [total, 0]]]
    lane: list[Any] = []
    op = "tail" if _tails() else "call"
    for n in range(calls):
        lane.append(["q", 1000 + n, n + 1, op, [1, ["coder", _prompt(n)], {"d": []}, 3]])
        if not _tails():
            lane.append(["p", n + 1, _reply(n)])
    return channel, lane


def _side_host(calls: int) -> None:
    import bench_planlang as bench

    import planlang
    from planlang.isolation import parent

    _no_polling()
    channel, lane = _child_frames_to_host(calls)

    class Child:  # what a _Session takes of a pool's child
        def __init__(self) -> None:
            self.requests, self.answers = _packet_pipe(), _pipe()
            self.lane_requests, self.lane_answers = _packet_pipe(), _pipe()
            self.lanes = [(self.lane_requests[0], self.lane_answers[1])]

        def take(self) -> tuple[Any, int]:
            from planlang.isolation.frames import FrameReader

            return FrameReader(self.requests[0]), self.answers[1]

        def discard(self) -> None:
            pass

    parent.discard_later = lambda child, first=None: first() if first is not None else None
    host = {"agent": bench.agent, "fan_out": fan_out}
    box = planlang.Sandbox(host=host, limits=planlang.Limits(seconds=3600), isolation="process")
    fake = Child()
    session = parent._Session(box, fake, parent.Meter(box.limits))  # type: ignore[arg-type]
    _write(fake.requests[1], channel)
    _write(fake.lane_requests[1], lane)
    result = session.run(planlang.check(_plan(calls)))
    assert result == channel[1][3][0], result
    _drain(fake.answers[0])
    answers = _read_all(fake.lane_answers[0])
    agent_answers = 0 if _tails() else calls  # with tails, the callbacks' answers are kept
    assert answers.count(b'"callback"') == calls, answers[-300:]
    assert answers.count(b'"p",') == agent_answers and b'"a",' not in answers, answers[-300:]


def _ahead_host(calls: int) -> None:
    channel, lane = _child_frames_to_host(calls)
    _ahead(channel + lane, (1 if _tails() else 2) * calls + 2)


def _ahead(messages: list[Any], written: int) -> None:
    """What a side's run does to write the other side's frames ahead and drain its own
    (about as many), alone."""
    pipe = _packet_pipe()
    _write(pipe[1], messages)
    _drain(pipe[0])
    out = _pipe()
    _write(out[1], messages[:written])
    _drain(out[0])


# -- beside them -------------------------------------------------------------------------


def _side_inprocess(calls: int) -> None:
    import bench_planlang as bench

    import planlang

    host = {"agent": planlang.HostWord(bench.agent, fresh=True), "fan_out": fan_out}
    box = planlang.Sandbox(host=host, limits=planlang.Limits(seconds=3600), isolation="inprocess")
    box.run(planlang.check(_plan(calls)))


def _side_cpython(calls: int) -> None:
    import bench_planlang as bench

    exec(compile(_plan(calls), "plan.py", "exec"), {"agent": bench.agent, "fan_out": fan_out})  # noqa: S102


def child(side: str, calls: int) -> None:
    """One side, ``calls`` callbacks (callgrind counts the whole process, every thread),
    after a run of one: so the imports, threads and caches a first run makes are in Ir(0)."""
    sys.path.insert(0, str(HERE))
    run = {"child": _side_child, "host": _side_host, "inprocess": _side_inprocess,
           "cpython": _side_cpython, "ahead-child": _ahead_child,
           "ahead-host": _ahead_host}[side]  # fmt: skip
    run(1)
    if calls:
        run(calls)


def instructions(side: str, calls: int, folder: Path) -> int:
    return callgrind.instructions(
        __file__, ["--child", side, str(calls)], folder / f"cg.{side}.{calls}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--child", nargs=2, metavar=("SIDE", "N"))
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], int(args.child[1]))
        return 0
    if not 0 < args.calls <= MOST:
        parser.error(f"--calls must be 1-{MOST} (a lane's packet pipe holds 256 frames)")
    with tempfile.TemporaryDirectory() as folder:
        per_call = {side: (instructions(side, args.calls, Path(folder))
                           - instructions(side, 0, Path(folder))) / args.calls
                    for side in SIDES}  # fmt: skip
    child_side = per_call["child"] - per_call.pop("ahead-child")
    host_side = per_call["host"] - per_call.pop("ahead-host")
    cpython = per_call["cpython"]
    rows = [
        ("plain CPython (the thunk, `agent`, the fan-out)", cpython),
        ("planlang in-process, `agent` declared fresh", per_call["inprocess"]),
        ("process isolation: the plan's side", child_side),
        ("process isolation: the host's side (with `agent`)", host_side),
        ("process isolation: both sides", child_side + host_side),
    ]
    lines = [
        "## Process isolation: instructions per callback through a fan-out word (issue 12)",
        "",
        f"Command: `python benchmarks/bench_callbacks.py --calls {args.calls}`  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; callgrind, "
        "PYTHONHASHSEED=0, (Ir(N) - Ir(0)) / N for the whole plan (the thunk made, handed "
        "over, called back, its reply summed), less writing the frames ahead. System calls "
        "and wake-ups are not counted.",
        "",
        "| what runs | k instructions a callback | of plain CPython |",
        "|---|---|---|",
        *(f"| {name} | {value / 1000:,.1f} | {value / cpython:.2f}x |" for name, value in rows),
    ]
    section = "\n".join(lines)
    print(section)
    if args.out:
        write_block(args.out, "bench_callbacks", section + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
