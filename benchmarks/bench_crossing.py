"""What one host call costs each side under process isolation, in instructions (issue 12).

Wall time on this shared VM moves 2x between minutes; instruction counts from callgrind do not.
Each side of a sequential host call is run alone, in one process, against frames written ahead
into a packet pipe (``O_DIRECT``: each read returns one frame, as a read of a waiting answer does
in a real run), so nothing waits and only that side's own work is counted:

- the plan's side: the real child (``child._prepare``, its ``Endpoint``), running a plan that
  calls ``agent`` N times, the answers already in its pipe;
- the host's side: the real ``parent._Session`` serving N ``agent`` requests already in its pipe;
- beside them, the same plan in-process (``agent`` declared fresh), and plain CPython calling
  ``agent`` in the same loop.

One call costs ``(Ir(N calls) - Ir(0 calls)) / N``, both after a run of one call, less what
writing its frames ahead and draining the other pipe cost (``--child ahead-child``, ...). The host's
side includes ``agent`` itself (bench_planlang's, which builds a small dict from its prompt),
as plain CPython's loop does.
System calls (a write and a read each side) and the wake-ups of a real round trip are not
counted: ``bench_isolation.py`` measures those, in wall time.

    python benchmarks/bench_crossing.py [--calls 200] [--out benchmarks/RESULTS.md]
    python benchmarks/bench_crossing.py --child SIDE N   (what callgrind runs)
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
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import callgrind  # noqa: E402
from results_block import write_block  # noqa: E402

HERE = Path(__file__).resolve().parent
SIDES = ("cpython", "inprocess", "child", "host", "ahead-child", "ahead-host")
_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ


def _packet_pipe() -> tuple[int, int]:
    read, write = os.pipe2(os.O_DIRECT)
    fcntl.fcntl(write, _SETPIPE_SZ, 1 << 20)  # 256 frames of one page each
    return read, write


def _frames(messages: list[Any]) -> list[bytes]:
    from planlang.isolation.frames import _HEADER, dumps

    return [_HEADER.pack(len(body), time.monotonic()) + body for body in map(dumps, messages)]


def _drain(fd: int) -> None:
    os.set_blocking(fd, False)
    try:
        while os.read(fd, 1 << 20):
            pass
    except BlockingIOError:
        pass


def _plan(calls: int) -> str:
    return (f"t = 0\nfor i in range({calls}):\n    r = agent('coder', f'Round 1: task-{{i}}')\n"
            "    t = t + r['tokens']\nresult = t\n")  # fmt: skip


@functools.cache
def _answer() -> dict[str, Any]:
    """What the host answers every call (made once: the harness must not count ``agent``)."""
    import bench_planlang as bench

    return bench.agent("coder", "Round 1: task-7")


def _answer_message(rid: int) -> list[Any]:
    """The host's answer to call ``rid``, as this copy of planlang sends it (a copy from
    before plain answers sends it tagged: so two copies can be compared)."""
    try:
        from planlang.isolation.channel import PLAIN  # noqa: F401
    except ImportError:
        from planlang.isolation import codec

        return ["a", rid, True, codec.json_object(_answer())]  # type: ignore[attr-defined]
    return ["p", rid, _answer()]


def _side_child(calls: int) -> None:
    """The plan's process: ``calls`` host calls, each answer already in the pipe."""
    import planlang
    from planlang.isolation import child as plan_process
    from planlang.isolation import peer as peer_module
    from planlang.isolation.channel import Endpoint
    from planlang.isolation.frames import FrameReader, dumps, loads
    from planlang.sandbox.inprocess import used_names

    checked = planlang.check(_plan(calls))
    assert checked.code is not None
    peer = peer_module.Peer()
    payload = {
        "code": base64.b64encode(marshal.dumps(checked.code)).decode("ascii"),
        "filename": checked.filename, "sha256": checked.sha256,
        "limits": peer.encode(dataclasses.asdict(planlang.Limits(seconds=3600))),
        "host": {"agent": {"w": 1}}, "deadline": peer.encode(time.monotonic() + 3600),
        "names": sorted(used_names(checked.code)), "deep": False,
    }  # fmt: skip
    box, again = plan_process._prepare(peer, loads(dumps(payload)))
    answers, to_host = _packet_pipe(), _packet_pipe()
    for frame in _answers(calls):
        os.write(answers[1], frame)
    peer.endpoint = Endpoint(FrameReader(answers[0]), to_host[1], peer.serve,
                             lambda op, p: None, default_context=0)  # fmt: skip
    box.run(again)
    _drain(to_host[0])


def _side_host(calls: int) -> None:
    """The host: a ``_Session`` serving ``calls`` requests already in its pipe."""
    import bench_planlang as bench

    import planlang
    from planlang.isolation import parent

    class Child:  # what a _Session takes of a pool's child
        def __init__(self) -> None:
            self.requests, self.answers = _packet_pipe(), _packet_pipe()
            self.lanes: list[tuple[int, int]] = []  # a sequential plan calls back nothing

        def take(self) -> tuple[Any, int]:
            from planlang.isolation.frames import FrameReader

            return FrameReader(self.requests[0]), self.answers[1]

        def discard(self) -> None:
            pass

    parent.discard_later = lambda child, first=None: first() if first is not None else None
    box = planlang.Sandbox(host=bench.HOST, limits=planlang.Limits(seconds=3600),
                           isolation="process")  # fmt: skip
    fake = Child()
    session = parent._Session(box, fake, parent.Meter(box.limits))  # type: ignore[arg-type]
    for frame in _requests(calls):
        os.write(fake.requests[1], frame)
    session.run(planlang.check("r = agent('coder', 'x')\nresult = 1\n"))
    _drain(fake.answers[0])


def _answers(calls: int) -> list[bytes]:
    """The host's answers to the plan's ``calls`` calls, as frames."""
    return _frames([_answer_message(rid) for rid in range(1, calls + 1)])


def _requests(calls: int) -> list[bytes]:
    """The plan's ``calls`` requests and its run's answer, as frames: the run's request is
    number 1, and ``agent`` the first host word handed out."""
    requests = [["q", 100 + i, 1, "call", [1, ["coder", f"Round 1: task-{i}"], {"d": []}, 4]]
                for i in range(calls)]  # fmt: skip
    return _frames([*requests, ["a", 1, True, [1, 0]]])


def _ahead(frames: list[bytes]) -> None:
    """What a side's run does to write its frames ahead and drain the other pipe, alone."""
    pipe = _packet_pipe()
    for frame in frames:
        os.write(pipe[1], frame)
    _drain(pipe[0])


def _side_inprocess(calls: int) -> None:
    import bench_planlang as bench

    import planlang

    host = {"agent": planlang.HostWord(bench.agent, fresh=True)}
    box = planlang.Sandbox(host=host, limits=planlang.Limits(seconds=3600), isolation="inprocess")
    box.run(planlang.check(_plan(calls)))


def _side_cpython(calls: int) -> None:
    import bench_planlang as bench

    exec(compile(_plan(calls), "plan.py", "exec"), {"agent": bench.agent})  # noqa: S102


def child(side: str, calls: int) -> None:
    """One side, ``calls`` host calls (callgrind counts the whole process), after a run of one
    call: so the imports, threads and caches a first call makes are in Ir(0) too."""
    sys.path.insert(0, str(HERE))
    run = {"child": _side_child, "host": _side_host, "inprocess": _side_inprocess,
           "cpython": _side_cpython, "ahead-child": lambda n: _ahead(_answers(n)),
           "ahead-host": lambda n: _ahead(_requests(n))}[side]  # fmt: skip
    run(1)
    if calls:
        run(calls)


def instructions(side: str, calls: int, folder: Path) -> int:
    return callgrind.instructions(
        __file__, ["--child", side, str(calls)], folder / f"cg.{side}.{calls}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--child", nargs=2, metavar=("SIDE", "N"))
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], int(args.child[1]))
        return 0
    if not 0 < args.calls <= 250:
        parser.error("--calls must be 1-250 (a packet pipe of 1 MiB holds 256 frames)")
    with tempfile.TemporaryDirectory() as folder:
        per_call = {side: (instructions(side, args.calls, Path(folder))
                           - instructions(side, 0, Path(folder))) / args.calls
                    for side in SIDES}  # fmt: skip
    child_side = per_call["child"] - per_call.pop("ahead-child")
    host_side = per_call["host"] - per_call.pop("ahead-host")
    cpython = per_call["cpython"]
    rows = [
        ("plain CPython (the loop and `agent`)", cpython),
        ("planlang in-process, `agent` declared fresh", per_call["inprocess"]),
        ("process isolation: the plan's side", child_side),
        ("process isolation: the host's side (with `agent`)", host_side),
        ("process isolation: both sides", child_side + host_side),
    ]
    lines = [
        "## Process isolation: instructions per host call (issue 12)",
        "",
        f"Command: `python benchmarks/bench_crossing.py --calls {args.calls}`  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; callgrind, "
        "PYTHONHASHSEED=0, (Ir(N) - Ir(0)) / N, less writing the frames ahead. System calls "
        "and wake-ups are not counted.",
        "",
        "| what runs | k instructions a call | of plain CPython |",
        "|---|---|---|",
        *(f"| {name} | {value / 1000:,.1f} | {value / cpython:.2f}x |" for name, value in rows),
    ]
    section = "\n".join(lines)
    print(section)
    if args.out:
        write_block(args.out, "bench_crossing", section + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
