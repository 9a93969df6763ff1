"""A chat-completions client for any OpenAI-compatible endpoint (vLLM, llama.cpp server,
Ollama, OpenAI), on `httpx`: one `httpx.Client` per proposer, so connections are kept alive
and reused across calls, and the usual proxy variables (`HTTP_PROXY`, `HTTPS_PROXY`,
`ALL_PROXY`, `NO_PROXY`) are honoured (httpx's `trust_env`).

One call = one `POST {base_url}/chat/completions`. Around it, in this order:

1. **Transcripts** (`TranscriptStore`): the request body's sha256 (canonical JSON, sorted
   keys) names a file under `.membrane/transcripts/` holding the request and the reply. In
   replay mode only the store answers, and a miss is `EndpointUnavailable`; otherwise a hit
   answers without network when `cache` is on, and every new reply is stored (atomically).
2. **Circuit breaker** (`CircuitBreaker`): after `breaker_failures` consecutive failed calls
   it opens and every later call fails at once with `EndpointUnavailable` (the batch stops).
3. **Retries** (`RetryPolicy`): connection errors, timeouts, 408, 429 and 5xx are retried up
   to `retries` times with exponential backoff and full jitter, waiting at least what a
   `Retry-After` header asks, never past the caller's deadline.

Failures that are not the model's fault raise `InfrastructureError` (the run fails closed);
the proposer turns unusable answers into critiques. The API key is read from the
environment variable the config names and is never stored or logged.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import random
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Final
from urllib.parse import urlsplit

import httpx
import orjson

from harness.errors import ConfigError, EndpointUnavailable, InfrastructureError
from harness.models import CallUsage
from harness.workspace import LlmConfig, atomic_write

__all__ = [
    "LOOPBACK_HOSTS",
    "MAX_RESPONSE_BYTES",
    "ChatClient",
    "ChatReply",
    "CircuitBreaker",
    "FormatUnsupported",
    "RetryPolicy",
    "TranscriptStore",
    "parse_retry_after",
    "request_key",
]

MAX_RESPONSE_BYTES: Final = 8_000_000
LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "localhost", "::1"})
_RETRY_STATUS: Final = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
Sleep = Callable[[float], None]
Clock = Callable[[], float]


def request_key(body: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of a request body: the transcript's name."""
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass(frozen=True)
class ChatReply:
    """An endpoint's answer: HTTP status (200, or 400 for a refused `response_format`),
    the decoded JSON reply, and what the call cost."""

    status: int
    data: dict[str, Any]
    usage: CallUsage


class FormatUnsupported(Exception):
    """The endpoint refused the request's `response_format` (HTTP 400 naming it)."""


class TranscriptStore:
    """request -> reply files under `root`, named by `request_key`, written atomically.

    `journal`: when a list (a `--workers` worker or Ray actor sets it for each cohort),
    every transcript written in this process is also appended to it as (path relative to
    the store's root, bytes), so the batch's own process can store it in its workspace:
    an actor on another node writes into a copy of the workspace that is then removed."""

    journal: ClassVar[list[tuple[str, bytes]] | None] = None

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> tuple[int, dict[str, Any]] | None:
        path = self.path(key)
        try:
            entry = orjson.loads(path.read_bytes())
            status, data = int(entry["status"]), entry["response"]
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return None
        return (status, data) if isinstance(data, dict) else None

    def put(self, key: str, body: dict[str, Any], status: int, data: dict[str, Any]) -> None:
        entry = {"key": key, "request": body, "status": status, "response": data}
        payload = orjson.dumps(entry, option=orjson.OPT_SORT_KEYS)
        atomic_write(self.path(key), payload)
        if TranscriptStore.journal is not None:
            TranscriptStore.journal.append((f"{key[:2]}/{key}.json", payload))


@dataclass
class CircuitBreaker:
    """Opens after `threshold` consecutive failed calls; stays open for the session."""

    threshold: int
    failures: int = 0
    last_error: str = ""

    @property
    def open(self) -> bool:
        return self.failures >= self.threshold

    def success(self) -> None:
        self.failures = 0

    def failure(self, error: str) -> None:
        self.failures += 1
        self.last_error = error


@dataclass
class RetryPolicy:
    """Exponential backoff with full jitter; a `Retry-After` is a floor."""

    retries: int
    base_s: float
    max_s: float
    rng: random.Random = field(default_factory=lambda: random.Random(0))

    def delay(self, retry: int, retry_after: float | None) -> float:
        jittered = self.rng.uniform(0, min(self.max_s, self.base_s * 2**retry))
        return max(jittered, retry_after or 0.0)


def parse_retry_after(value: str | None, now: Callable[[], datetime] | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or (lambda: datetime.now(UTC)))()).total_seconds())


class _Transient(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ChatClient:
    """POSTs chat-completions requests with transcripts, a breaker and retries.

    `sleep`, `clock` and `rng` are injectable so tests never wait for real.
    `allow_remote=False` refuses any endpoint but loopback (tests set it through
    `MEMBRANE_ALLOW_MODEL_REQUESTS=0`).
    """

    def __init__(
        self,
        settings: LlmConfig,
        *,
        transcripts: TranscriptStore | None = None,
        replay: bool = False,
        api_key: str | None = None,
        allow_remote: bool = True,
        sleep: Sleep = time.sleep,
        clock: Clock = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        url = urlsplit(settings.base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ConfigError(f"[llm].base_url {settings.base_url!r} is not an http(s) URL")
        if replay and transcripts is None:
            raise ConfigError("--replay needs a transcript folder")
        if not allow_remote and url.hostname not in LOOPBACK_HOSTS:
            raise ConfigError(
                f"model requests to {url.hostname} are disabled (MEMBRANE_ALLOW_MODEL_REQUESTS=0); "
                "only loopback endpoints are allowed"
            )
        self.settings = settings
        self.transcripts = transcripts
        self.replay = replay
        self._api_key = api_key
        self._url = url
        self._path = url.path.rstrip("/") + "/chat/completions"
        self.sleep = sleep
        self.clock = clock
        self.breaker = CircuitBreaker(settings.breaker_failures)
        self.retry = RetryPolicy(
            settings.retries, settings.backoff_s, settings.backoff_max_s, rng or random.Random(0)
        )
        self.calls = 0  # HTTP requests actually sent
        # one pooled client: keep-alive connections reused across calls; proxies from env
        self._http = httpx.Client(
            timeout=settings.timeout_s, trust_env=True, follow_redirects=False
        )
        # a client dropped without close() still closes its sockets
        self._finalizer = weakref.finalize(self, self._http.close)

    def close(self) -> None:
        """Close the pooled connections (idempotent)."""
        self._finalizer()

    @property
    def endpoint(self) -> str:
        return f"{self._url.scheme}://{self._url.netloc}{self._path}"

    def complete(self, body: dict[str, Any], *, deadline: float | None = None) -> ChatReply:
        """The reply to `body` (from the transcripts or the endpoint).

        Raises `FormatUnsupported` when the endpoint refuses `response_format`,
        `EndpointUnavailable` when the breaker is open or a replay misses, and
        `InfrastructureError` when the call fails for good.
        """
        key = request_key(body)
        cached = self.transcripts.get(key) if self.transcripts is not None else None
        if self.replay and cached is None:
            raise EndpointUnavailable(
                f"replay: no transcript for request {key[:16]} in {self.transcripts and self.transcripts.root}; "
                "the requests differ from the recorded ones (run without --replay to record them)"
            )
        if cached is not None and (self.replay or self.settings.cache):
            return self._reply(cached[0], cached[1], key, 0.0, cached=True, body=body)
        if self.breaker.open:
            raise EndpointUnavailable(
                f"{self.endpoint} is unavailable: circuit breaker open after "
                f"{self.breaker.failures} consecutive failed calls (last: {self.breaker.last_error})"
            )
        t0 = self.clock()
        try:
            status, data = self._with_retries(body, deadline)
        except InfrastructureError as exc:
            self.breaker.failure(str(exc))
            if self.breaker.open:
                raise EndpointUnavailable(
                    f"{self.endpoint} is unavailable: circuit breaker opened after "
                    f"{self.breaker.failures} consecutive failed calls (last: {exc})"
                ) from exc
            raise
        self.breaker.success()
        if self.transcripts is not None:
            self.transcripts.put(key, body, status, data)
        return self._reply(status, data, key, self.clock() - t0, cached=False, body=body)

    def _reply(
        self,
        status: int,
        data: dict[str, Any],
        key: str,
        seconds: float,
        *,
        cached: bool,
        body: dict[str, Any] | None = None,
    ) -> ChatReply:
        if status == 400:
            raise FormatUnsupported(_error_text(data))
        raw = data.get("usage")
        usage = raw if isinstance(raw, dict) else {}
        prompt, p_est = _tokens(usage.get("prompt_tokens"), _estimate(body or {}))
        completion, c_est = _tokens(usage.get("completion_tokens"), _estimate(data.get("choices")))
        return ChatReply(
            status=status,
            data=data,
            usage=CallUsage(
                tokens_prompt=prompt,
                tokens_completion=completion,
                seconds=round(max(0.0, seconds), 6),
                cached=cached,
                request=key,
                estimated=p_est or c_est,
            ),
        )

    def _with_retries(
        self, body: dict[str, Any], deadline: float | None
    ) -> tuple[int, dict[str, Any]]:
        last: _Transient | None = None
        for retry in range(self.retry.retries + 1):
            if last is not None:
                wait = self.retry.delay(retry - 1, last.retry_after)
                if deadline is not None and self.clock() + wait > deadline:
                    raise InfrastructureError(
                        f"{self.endpoint}: {last}; the per-run timeout leaves no time to retry"
                    )
                self.sleep(wait)
            timeout = self.settings.timeout_s
            if deadline is not None:
                timeout = min(timeout, deadline - self.clock())
                if timeout <= 0:
                    raise InfrastructureError(f"{self.endpoint}: the per-run timeout is spent")
            try:
                return self._post(body, timeout)
            except _Transient as exc:
                last = exc
        raise InfrastructureError(
            f"{self.endpoint}: {last} (gave up after {self.retry.retries + 1} tries)"
        )

    def _send(self, body: dict[str, Any], timeout: float) -> tuple[int, str | None, bytes]:
        """(status, Retry-After, body read up to one byte past the cap); raises `_Transient`
        for timeouts and transport errors."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        self.calls += 1
        started = time.monotonic()
        try:
            with self._http.stream(
                "POST",
                self.endpoint,
                content=orjson.dumps(body),
                headers=headers,
                timeout=timeout,
            ) as resp:
                raw = bytearray()
                for chunk in resp.iter_bytes():  # capped: a huge reply is refused, not read
                    raw += chunk
                    if len(raw) > MAX_RESPONSE_BYTES:
                        break
                    if time.monotonic() - started > timeout:  # the whole call, not each read
                        raise _Transient(
                            f"timed out: no complete reply within {timeout:g}s (it trickled in)"
                        )
                return resp.status_code, resp.headers.get("Retry-After"), bytes(raw)
        except httpx.TimeoutException as exc:
            raise _Transient(f"no reply within {timeout:.1f}s") from exc
        except (httpx.TransportError, OSError) as exc:
            raise _Transient(f"{type(exc).__name__}: {exc}") from exc

    def _post(self, body: dict[str, Any], timeout: float) -> tuple[int, dict[str, Any]]:
        """One HTTP request. Returns (200, reply) or (400, error) for a refused
        `response_format`; raises `_Transient` (retry) or `InfrastructureError` (give up)."""
        status, retry_after, raw = self._send(body, timeout)
        if status in _RETRY_STATUS:
            raise _Transient(f"HTTP {status}", parse_retry_after(retry_after))
        if len(raw) > MAX_RESPONSE_BYTES:
            raise InfrastructureError(f"{self.endpoint}: reply over {MAX_RESPONSE_BYTES} bytes")
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            if status == 200:
                raise InfrastructureError(f"{self.endpoint}: the reply is not JSON") from exc
            data = {}
        if not isinstance(data, dict):
            data = {}
        if status == 200:
            return status, data
        text = _error_text(data)
        if status == 400 and "response_format" in text:
            return 400, {"error": {"message": text[:2000]}}
        hint = " (check the API key variable [llm].api_key_env)" if status in (401, 403) else ""
        raise InfrastructureError(f"{self.endpoint}: HTTP {status}: {text[:300]}{hint}")


def _error_text(data: dict[str, Any]) -> str:
    err = data.get("error")
    if isinstance(err, dict):
        return str(err.get("message", err))
    return str(err if err is not None else data.get("detail", ""))


def _estimate(obj: object) -> int:
    """Tokens a request or a reply must at least have cost: its JSON text / 4."""
    try:
        text = json.dumps(obj, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return 0
    return (len(text) + 3) // 4


def _tokens(reported: object, estimate: int) -> tuple[int, bool]:
    """The server's count when it is a possible one (a positive int, or 0 for no text),
    else the estimate: a token budget never trusts a missing, negative or zero count."""
    possible = isinstance(reported, int) and not isinstance(reported, bool)
    if possible and (reported > 0 or (reported == 0 and estimate == 0)):  # type: ignore[operator]
        return int(reported), False  # type: ignore[call-overload]
    return estimate, True
