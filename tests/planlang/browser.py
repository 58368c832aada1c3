"""Headless Chromium for the report tests: the DOM after scripts ran, a screenshot, and every
request the page made, read from Chromium's own network log.

The browser runs in a fresh network namespace (``unshare -n``: no network at all) when the
machine allows it, and always with ``--log-net-log``: a request the page makes is in that log
even when it fails, so "no request" is asserted, not assumed. Chromium's own background
requests (its clock and updater) carry no page origin and are told apart by that.
Without a browser the tests skip locally and fail in CI (``CI=true``): ``.ci/run`` installs it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars",
]  # fmt: skip
HANG_GUARD = 180  # seconds; only so a wedged browser cannot hang the suite


def chromium() -> str:
    path = shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(path):
        message = "chromium is not installed (.ci/run installs it: apt-get install -y chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def offline_prefix() -> list[str]:
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        return [unshare, "-n"]
    return []


def browse(page: Path, work: Path, *args: str, fragment: str = "") -> tuple[str, list[str]]:
    """Load ``page`` offline; return (stdout, URLs the page asked for)."""
    work.mkdir(parents=True, exist_ok=True)
    netlog = work / "net.json"
    command = [*offline_prefix(), chromium(), *FLAGS, f"--user-data-dir={work / 'profile'}",
               f"--log-net-log={netlog}", *args, page.resolve().as_uri() + fragment]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=HANG_GUARD)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, page_requests(netlog)


def page_requests(netlog: Path) -> list[str]:
    """URLs requested on behalf of a page (an origin, or a file:// isolation key)."""
    log = json.loads(netlog.read_text(encoding="utf-8"))
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    urls = []
    for event in log["events"]:
        params = event.get("params") or {}
        if event["type"] != start or "url" not in params:
            continue
        if params.get("initiator") != "not an origin" or "file://" in params.get(
            "network_isolation_key", ""
        ):
            urls.append(params["url"])
    return urls


class Elements(HTMLParser):
    """Every element's tag and attributes, in document order."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, Any]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


def elements(html: str) -> list[tuple[str, dict[str, Any]]]:
    parser = Elements()
    parser.feed(html)
    return parser.found


def with_class(html: str, name: str) -> list[dict[str, Any]]:
    return [a for _, a in elements(html) if name in (a.get("class") or "").split()]
