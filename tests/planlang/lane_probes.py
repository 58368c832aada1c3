"""A plan process that talks on a lane as a compromised one would (tests only): a probe, raw
Python run in the plan's place, calls the host word ``w`` with a plan function; ``w`` calls it
back on a thread of its own, which takes lane 0; the probe then writes ``LANE_FRAMES(ask)`` on
that lane (``ask`` is the host's callback request) instead of running the function. Shared by
``test_isolation_lanes.py`` and ``test_isolation_lanes_review.py``."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from planlang.isolation.pool import Pool
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits

HANG_GUARD = 30.0

ON_A_LANE = """
import gc, threading, time
from planlang.isolation.channel import Endpoint
from planlang.isolation.frames import FrameReader, write_all
from planlang.isolation.peer import Peer
peer = [o for o in gc.get_objects() if type(o) is Peer and o.endpoint is not None][0]
taken = {}
def open_lane(op, payload):  # the host's notice of a lane: taken here, no thread started
    taken['pipes'] = peer.lanes[payload]
peer.notice = open_lane
peer.endpoint._notice = open_lane
box = [o for o in gc.get_objects() if type(o).__name__ == '_ChildSandbox'][0]
wid = box.host['w'].fn.wid
peer.functions[1] = lambda: None
def call_w():
    try:
        peer.ask('call', [wid, [{'c': 1}], {'d': []}, None])
    except Exception:
        pass
threading.Thread(target=call_w, daemon=True).start()
while 'pipes' not in taken:
    time.sleep(0.01)
read_fd, write_fd = taken['pipes']
reader = FrameReader(read_fd, 2**31)
ask = reader.read()  # the host's callback, on the lane
for frame in LANE_FRAMES(ask):
    if isinstance(frame, bytes):
        import os
        os.write(write_fd, frame)
    else:
        write_all(write_fd, frame)
time.sleep(30)
result = None
"""


def lane_probe(pool: Pool, frames: str, seconds: float = 3, **host: Any) -> Sandbox:
    """A sandbox whose run is the probe above, on ``pool`` (started with probes on)."""
    probe = f"def LANE_FRAMES(ask):\n    return {frames}\n" + ON_A_LANE
    box = Sandbox(host=dict(host), limits=Limits(seconds=seconds), isolation="process")
    box._pool = pool  # type: ignore[attr-defined]
    box._probe = {"probe": probe}  # type: ignore[attr-defined]
    return box


def calls_back_on_a_thread(seen: list[Any], *, wait: bool = True
                           ) -> Callable[[Callable[[], Any]], None]:  # fmt: skip
    """A host word that calls a plan function back on a thread of its own and keeps what it
    gave or raised, whatever that is (an embedder's thread sees it so); it waits for that
    thread (``wait``) or returns at once (the host then reads the run's channel meanwhile)."""

    def w(f: Callable[[], Any]) -> None:
        def other() -> None:
            try:
                seen.append(f())
            except BaseException as error:  # noqa: BLE001 - the test looks at its kind
                seen.append(error)

        thread = threading.Thread(target=other)
        thread.start()
        if wait:
            thread.join(HANG_GUARD)

    return w
