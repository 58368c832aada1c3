"""One live connection to an MCP server, usable from the run's threads.

The SDK is asynchronous and the runtime is threaded, so each connection runs its own event
loop on a daemon thread that holds the session open; calls from any thread are handed to that
loop and waited for. Whatever goes wrong with the server itself (it cannot start, it dies, it
stops answering) is a ``ToolUnavailable`` that names the server and ends the run; a tool that
answers with an error is not this module's business (see ``planlang.mcp.tools``).

The SDK's client validates a result against the tool's ``outputSchema`` before returning it;
planlang does that itself, after the result is committed to the ledger (a call that took effect
must be remembered even when its result is wrong), so the session here skips that step.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, TextIO

from planlang.mcp.config import ServerConfig
from runtime.errors import RunCancelled, ToolUnavailable

__all__ = ["Connection"]

_START_SECONDS = 60.0


def _session_class() -> Any:
    from mcp.client.session import ClientSession

    class Session(ClientSession):
        async def validate_tool_result(self, name: str, result: Any) -> None:
            """planlang validates structured results itself, after committing them."""

    return Session


class Connection:
    """A session with one server, opened on first use and kept until ``close``."""

    def __init__(self, config: ServerConfig, *, log: Path | None = None) -> None:
        self.config = config
        self.log = log
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session: Any = None
        self._stop: asyncio.Event | None = None
        self._ended = threading.Event()
        self._failure: BaseException | None = None
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"Connection({self.config.name!r}, {self.config.where()!r})"

    # -- the loop's side -----------------------------------------------------------------

    def _transport(self, errlog: TextIO) -> Any:
        config = self.config
        if config.url is not None:
            from mcp.client.streamable_http import streamable_http_client

            return streamable_http_client(config.url)
        from mcp.client.stdio import StdioServerParameters, stdio_client

        assert config.command is not None
        command, *args = config.command
        params = StdioServerParameters(command=command, args=args, env=dict(config.env) or None,
                                       cwd=config.cwd)  # fmt: skip
        return stdio_client(params, errlog=errlog)

    async def _main(self, ready: Future[None]) -> None:
        self._stop = asyncio.Event()
        log: TextIO = (open(self.log, "a", encoding="utf-8") if self.log is not None  # noqa: SIM115
                        else open(os.devnull, "w", encoding="utf-8"))  # fmt: skip
        try:
            async with self._transport(log) as streams:
                read, write = streams[0], streams[1]
                async with _session_class()(read, write) as session:
                    await session.initialize()
                    self._session = session
                    ready.set_result(None)
                    await self._stop.wait()
        except BaseException as error:  # noqa: BLE001 - recorded: every later call reports it
            self._failure = error
            if not ready.done():
                ready.set_exception(error)
        finally:
            self._session = None
            log.close()

    def _serve(self, ready: Future[None]) -> None:
        loop = self._loop
        assert loop is not None
        try:
            loop.run_until_complete(self._main(ready))
        finally:
            self._ended.set()
            with contextlib.suppress(Exception):
                loop.close()

    # -- the threads' side ---------------------------------------------------------------

    def _open(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._ended.is_set():
                raise self._unavailable("is no longer connected")
            if self._loop is not None:
                return self._loop
            self._loop = asyncio.new_event_loop()
            ready: Future[None] = Future()
            self._thread = threading.Thread(
                target=self._serve, args=(ready,), name=f"mcp:{self.config.name}", daemon=True
            )
            self._thread.start()
            try:
                ready.result(timeout=_START_SECONDS)
            except FutureTimeout:
                raise self._unavailable(f"did not start within {_START_SECONDS:g} s") from None
            except BaseException as error:  # noqa: BLE001 - the SDK's or the OS's
                raise self._unavailable(f"could not be started: {_describe(error)}") from None
            return self._loop

    def _unavailable(self, what: str) -> ToolUnavailable:
        return ToolUnavailable(f"The MCP server {self.config.name!r} ({self.config.where()}) "
                               f"{what}.")  # fmt: skip

    def request(
        self, what: str, make: Any, timeout: float | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> Any:  # fmt: skip
        """Run ``make(session)`` (a coroutine) on the loop and wait for its result.

        ``stop`` (the run's cancellation) abandons the wait with ``RunCancelled``: the call's
        outcome is then unknown, as at a kill.
        """
        loop = self._open()
        session = self._session
        if session is None:
            raise self._unavailable(f"stopped answering before {what}")
        future = asyncio.run_coroutine_threadsafe(make(session), loop)
        limit = timeout if timeout is not None else self.config.timeout
        deadline = time.monotonic() + limit
        try:
            while True:
                try:
                    return future.result(timeout=0.2)
                except FutureTimeout:
                    if stop is not None and stop():
                        future.cancel()
                        raise RunCancelled(f"The run was cancelled during {what} on MCP server "
                                           f"{self.config.name!r}.") from None  # fmt: skip
                    if self._ended.is_set():
                        future.cancel()
                        raise self._unavailable(f"stopped answering during {what}") from None
                    if time.monotonic() > deadline:
                        future.cancel()
                        raise self._unavailable(f"did not answer {what} within {limit:g} s"
                                                ) from None  # fmt: skip
        except (ToolUnavailable, RunCancelled):
            raise
        except BaseException as error:  # noqa: BLE001 - transport errors, closed streams
            if isinstance(error, KeyboardInterrupt):
                raise
            raise self._unavailable(f"failed during {what}: {_describe(error)}") from None

    def list_tools(self) -> list[Any]:
        """Every tool the server offers (all pages)."""

        async def listing(session: Any) -> list[Any]:
            from mcp_types import PaginatedRequestParams

            tools: list[Any] = []
            cursor = None
            for _ in range(100):
                page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor))
                tools.extend(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    break
            return tools

        return list(self.request("the list of its tools", listing, _START_SECONDS))

    def call_tool(
        self, tool: str, arguments: dict[str, Any], stop: Callable[[], bool] | None = None
    ) -> Any:
        """One ``tools/call``; returns the SDK's ``CallToolResult``."""
        return self.request(f"the call of {tool}",
                            lambda session: session.call_tool(tool, arguments),
                            stop=stop)  # fmt: skip

    def close(self) -> None:
        """End the session (a stdio server's stdin closes and it exits)."""
        loop, stop = self._loop, self._stop
        if loop is None or stop is None or self._ended.is_set():
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(stop.set)
        self._ended.wait(timeout=10)


def _describe(error: BaseException) -> str:
    """A one-line account of an error, looking inside the SDK's exception groups."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = str(error) or type(error).__name__
    return f"{type(error).__name__}: {text}" if text != type(error).__name__ else text
