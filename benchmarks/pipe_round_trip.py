"""The floor under process isolation: a bare JSON round trip over a pipe, no planlang.

    python benchmarks/pipe_round_trip.py

A parent and a child Python process exchange 2,000 length-prefixed JSON messages shaped like
planlang's host calls, one after another; prints microseconds per round trip (three runs).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

CHILD = r"""
import json, os
r = os.fdopen(0, "rb"); w = os.fdopen(1, "wb")
while True:
    h = r.read(4)
    if not h:
        break
    body = r.read(int.from_bytes(h, "big"))
    out = json.dumps(["a", json.loads(body)[1], 1, {"d": ["x", 1]}]).encode()
    w.write(len(out).to_bytes(4, "big") + out)
    w.flush()
"""


def main() -> int:
    child = subprocess.Popen(  # noqa: S603 - our own interpreter
        [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert child.stdin is not None and child.stdout is not None
    for _ in range(3):
        start = time.perf_counter()
        for i in range(2000):
            out = json.dumps(["q", i, None, "call", [1, [], {"d": []}, 3]]).encode()
            child.stdin.write(len(out).to_bytes(4, "big") + out)
            child.stdin.flush()
            size = int.from_bytes(child.stdout.read(4), "big")
            json.loads(child.stdout.read(size))
        print(f"pipe round trip: {(time.perf_counter() - start) / 2000 * 1e6:.0f} µs")
    child.stdin.close()
    child.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
