"""A minimal DevTools-protocol session with headless Chromium over ``--remote-debugging-pipe``.

Just enough to click in a page like a person does (a mouse press and release at a point) and
read the page back: no client library, no port, the browser's own pipe (fd 3 in, fd 4 out,
JSON messages ended by a NUL byte).
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from browser import FLAGS, HANG_GUARD, chromium, offline_prefix


class Browser:
    def __init__(self, work: Path) -> None:
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # bash moves our pipe ends to the fds 3 and 4 the browser reads and writes; they are
        # first put at 100 or above, so no move can overwrite the other end
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100) for fd in (to_child_r, from_child_w)]
        os.close(to_child_r)
        os.close(from_child_w)
        moves = f"3<&{high[0]} 4>&{high[1]} {high[0]}<&- {high[1]}>&-"
        command = [*offline_prefix(), chromium(), *FLAGS, f"--user-data-dir={work / 'profile'}",
                   "--remote-debugging-pipe", "--window-size=1300,900"]  # fmt: skip
        self._process = subprocess.Popen(
            ["bash", "-c", f'exec "$@" {moves}', "bash", *command], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=tuple(high),
        )  # fmt: skip
        for fd in high:
            os.close(fd)
        self._buffer = b""
        self._ids = 0
        self.events: list[dict[str, Any]] = []
        self._session: str | None = None

    def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._ids += 1
        message: dict[str, Any] = {"id": self._ids, "method": method, "params": params or {}}
        if self._session is not None:
            message["sessionId"] = self._session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._ids:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def _read(self) -> dict[str, Any]:
        deadline = time.monotonic() + HANG_GUARD
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("the browser stopped answering")
            chunk = os.read(self._from_child, 1 << 16)
            if not chunk:
                raise RuntimeError("the browser closed its pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message = json.loads(raw)
        if "method" in message:
            self.events.append(message)
        return message

    def open(self, page: Path) -> None:
        """Open ``page`` in a new tab and wait for its load event."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        attached = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})
        self._session = attached["sessionId"]
        self.send("Page.enable")
        self.send("Network.enable")
        self.send("Page.navigate", {"url": page.resolve().as_uri()})
        while not any(e["method"] == "Page.loadEventFired" for e in self.events):
            self._read()

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return result["result"].get("value")

    def click(self, x: float, y: float) -> None:
        for kind in ("mousePressed", "mouseReleased"):
            event = {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}
            self.send("Input.dispatchMouseEvent", event)

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events
                if e["method"] == "Network.requestWillBeSent"]  # fmt: skip

    def close(self) -> None:
        try:
            self._session = None
            self.send("Browser.close")
        except (RuntimeError, OSError, TimeoutError):
            pass
        finally:
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            os.close(self._to_child)
            os.close(self._from_child)
