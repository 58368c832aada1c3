"""The real client: httpx against any OpenAI-compatible ``/chat/completions``.

One pooled ``httpx.Client`` serves every worker (threads share its connections). Transient
trouble is retried with exponential backoff and full jitter: connection errors, timeouts,
429 (waiting at least as long as ``Retry-After`` says) and 5xx. Anything else, including a
body that is not the expected JSON, is a ``ClientError``: an error, never an answer.

A call made through ``call_until(stop, ...)`` (the front door makes every paid call so, with
its run's ``stop``) stops retrying once ``stop()`` says True: no attempt starts after it, a
backoff sleep under way is cut short (``stop`` is asked every 50 ms), and the call ends with
``RunCancelled``. An attempt already on the wire is not abandoned: the server may bill it, so
its answer is waited for (at most ``timeout``), returned, and stored and billed by the caller.

The API key goes into the Authorization header and nowhere else. Error messages quote the
server's body only after redacting the key, and repr/str never show it.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from .errors import ClientError, RunCancelled
from .reply import Reply

_RETRY_STATUS = {429, 500, 502, 503, 504}
_STOP_POLL = 0.05  # how often a backoff sleep asks whether the run was cancelled


class HTTPClient:
    """A callable ``client(model, messages, **params) -> Reply`` over HTTP."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        timeout: float = 60.0,
        retries: int = 4,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        max_connections: int = 64,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.retries = retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self._sleep = sleep
        self._key = api_key or ""
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        limits = httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        self._http = httpx.Client(headers=headers, timeout=timeout, limits=limits)

    def __repr__(self) -> str:
        return f"HTTPClient({self.base_url!r}, api_key={'<set>' if self._key else None})"

    __str__ = __repr__

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "<redacted>") if self._key else text

    def _excerpt(self, text: str, most: int) -> str:
        """The first ``most`` characters of a body, redacted before the cut: a key that
        straddles it is found whole (cut first, its first characters were quoted)."""
        return self._redact(text[: most + len(self._key or "")])[:most]

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        backoff = random.uniform(0, min(self.backoff_max, self.backoff_base * 2**attempt))
        return max(backoff, retry_after) if retry_after is not None else backoff

    def __call__(self, model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        return self.call_until(None, model, messages, **params)

    def call_until(
        self,
        stop: Callable[[], bool] | None,
        model: str,
        messages: list[dict[str, Any]],
        **params: Any,
    ) -> Reply:
        """``self(model, messages, **params)``, retrying only while ``stop()`` says False.

        Once it says True, no attempt starts and no backoff sleep goes on: ``RunCancelled``.
        The attempt on the wire when it turns True finishes (its answer is returned)."""
        body = {"model": model, "messages": messages, **params}
        started = time.perf_counter()
        attempt = 0
        while True:
            if stop is not None and stop():
                raise self._cancelled(attempt, None)
            try:
                return self._once(body, model, started)
            except ClientError as exc:
                if not exc.retryable or attempt >= self.retries:
                    raise
                self._pause(self._delay(attempt, exc.retry_after), stop, attempt + 1, exc)
                attempt += 1

    def _pause(self, seconds: float, stop: Callable[[], bool] | None, attempts: int,
               last: ClientError) -> None:  # fmt: skip
        """The backoff sleep; with ``stop``, slept in slices that each ask it first."""
        if stop is None:
            self._sleep(seconds)
            return
        left = seconds
        while left > 0:
            if stop():
                raise self._cancelled(attempts, last)
            step = min(left, _STOP_POLL)
            self._sleep(step)
            left -= step

    def _cancelled(self, attempts: int, last: ClientError | None) -> RunCancelled:
        said = "" if last is None else f"; the last attempt failed: {last}"
        return RunCancelled(
            f"The run was cancelled, so the call to {self.url} was not tried again "
            f"({attempts} attempt(s) made{said})."
        )

    def _once(self, body: dict[str, Any], model: str, started: float) -> Reply:
        try:
            response = self._http.post(self.url, json=body)
        except httpx.TimeoutException as exc:
            raise ClientError(
                f"The call to {self.url} timed out ({type(exc).__name__}).", retryable=True
            ) from None
        except httpx.ConnectError as exc:  # nothing listening, no route, no such host
            message = self._redact(str(exc)) or type(exc).__name__
            raise ClientError(
                f"The endpoint {self.url} is unreachable: {message}", retryable=True
            ) from None
        except httpx.TransportError as exc:
            message = self._redact(str(exc)) or type(exc).__name__
            raise ClientError(
                f"The call to {self.url} failed to connect or was dropped: {message}",
                retryable=True,
            ) from None
        if response.status_code != 200:
            excerpt = self._excerpt(response.text, 200)
            raise ClientError(
                f"The server at {self.url} answered HTTP {response.status_code}: {excerpt!r}",
                status=response.status_code,
                retryable=response.status_code in _RETRY_STATUS,
                retry_after=_retry_after(response.headers.get("retry-after")),
            )
        return self._parse(response, model, time.perf_counter() - started)

    def _parse(self, response: httpx.Response, model: str, seconds: float) -> Reply:
        try:
            payload = response.json()
            choice = payload["choices"][0]
            message = choice["message"]
            text = message["content"]
            finish = choice.get("finish_reason")
            finish = None if finish is None else str(finish)
            if not isinstance(text, str):
                raise TypeError("content is not a string")
            usage = payload.get("usage") or {}
            prompt_tokens = int(usage.get("prompt_tokens", 0))
            completion_tokens = int(usage.get("completion_tokens", 0))
            cost = usage.get("cost")
            credits = float(cost) if cost is not None else None
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            excerpt = self._excerpt(response.text, 120)
            raise ClientError(
                f"The server at {self.url} sent a body that is not a chat completion "
                f"({type(exc).__name__}): {excerpt!r}",
                status=response.status_code,
            ) from None
        data: Any = None
        try:
            data = json.loads(text)
        except ValueError:
            pass
        return Reply(
            text=text,
            finish=finish,
            data=data,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            seconds=seconds,
            credits=credits,
            model=str(payload.get("model") or model),
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> HTTPClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def http_client(
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float = 60.0,
    retries: int = 4,
    *,
    backoff_base: float = 0.5,
    backoff_max: float = 30.0,
    sleep: Callable[[float], None] = time.sleep,
) -> HTTPClient:
    """The real client. Defaults come from ``LLM_BASE_URL`` and ``LLM_API_KEY``."""
    url = base_url or os.environ.get("LLM_BASE_URL")
    if not url:
        raise ValueError("No endpoint: pass base_url or set LLM_BASE_URL (e.g. https://host/v1).")
    key = api_key if api_key is not None else os.environ.get("LLM_API_KEY")
    return HTTPClient(
        url,
        key,
        timeout=timeout,
        retries=retries,
        backoff_base=backoff_base,
        backoff_max=backoff_max,
        sleep=sleep,
    )
