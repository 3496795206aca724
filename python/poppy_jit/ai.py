"""AI components: `@unordered` async externals for LLM calls, embeddings and JSON HTTP APIs.

    llm(prompt, *, model, system, **kw) -> str (a tuple of n strings when n > 1)
    llm_stream(prompt, *, model, system, **kw) -> str   (assembled from the SSE stream)
    embed(texts, *, model, **kw) -> list[float] for a str, list[list[float]] for a list
    http_json(method, url, *, json=None, params=None, headers=None) -> parsed JSON

They use the official SDK (`openai.AsyncOpenAI`) on the HTTP client it is built on (`httpx2`),
configured like the SDK: OPENAI_BASE_URL (e.g. a `python -m poppy_jit.sim` server, which prints
the export line) and OPENAI_API_KEY (any value for the simulator). With neither set there is no
endpoint to talk to, and the first call says so (`MissingEndpointError`) instead of retrying.
Clients are bound to the event loop they first ran on, so one is kept per loop.

The request machinery is the SDK's and the HTTP client's, configured by `Policy`
(`configure(...)`):

* retries (`max_retries`) and timeouts (`timeout`) are the SDK's own: it retries 408, 409, 429,
  5xx, timeouts and connection errors with its exponential backoff, honouring `Retry-After`
  (seconds or a date), `retry-after-ms` and `x-should-retry`;
* at most `max_in_flight` requests per endpoint at once (`limits={endpoint: n}` per endpoint):
  the HTTP client's connection limit (`httpx2.Limits`); a request waits for a free connection
  without a pool timeout;
* requests and tokens per minute (`requests_per_minute`, `tokens_per_minute`, default off): a
  leaky-bucket limiter (`aiolimiter.AsyncLimiter`, or `limiter=` to inject another with the same
  `(max_rate, time_period)` constructor and `has_capacity`/`acquire(amount)` methods) in front of
  every HTTP attempt, retries included. Tokens are estimated from the request body (4 bytes a
  token) plus its `max_tokens`. Limiters are per endpoint and event loop.

`http_json` talks to arbitrary JSON APIs, not through the OpenAI SDK: it follows the same retry
rules (statuses, headers) with the SDK's backoff constants. Retries, rate-limit waits and
connection failures are logged on the `poppy_jit` logger (`poppy_jit.ai`).
"""
from __future__ import annotations

import asyncio
import dataclasses
import email.utils
import json as _json
import logging
import math
import os
import random
import time
import weakref
from typing import Any, Callable
from urllib.parse import urlsplit

import aiolimiter
import httpx2
import openai

from ._decorators import unordered

__all__ = ["llm", "llm_stream", "embed", "http_json", "client", "http_client", "warm_up",
           "configure", "Policy", "policy", "MissingEndpointError"]

log = logging.getLogger("poppy_jit.ai")

# The SDK's backoff constants (openai._constants), for http_json's retries.
_INITIAL_RETRY_DELAY = 0.5
_MAX_RETRY_DELAY = 8.0
_MAX_RETRY_AFTER = 60.0


class MissingEndpointError(RuntimeError):
    """Neither OPENAI_BASE_URL nor OPENAI_API_KEY is set: there is no endpoint to call."""


@dataclasses.dataclass
class Policy:
    """How the AI components use the SDK and the HTTP client (see the module docstring)."""

    max_in_flight: int = int(os.environ.get("POPPY_AI_MAX_IN_FLIGHT", "64"))
    limits: dict = dataclasses.field(default_factory=dict)  # endpoint -> max in flight
    max_retries: int = 4  # the SDK's retries per request
    timeout: float = 60.0  # per request attempt, seconds (the SDK's timeout)
    requests_per_minute: float | None = None  # per endpoint; None: no limit
    tokens_per_minute: float | None = None  # per endpoint; None: no limit
    limiter: Callable[[float, float], Any] = aiolimiter.AsyncLimiter

    def limit(self, endpoint: str) -> int:
        return self.limits.get(endpoint.rstrip("/"), self.max_in_flight)


policy = Policy()


def configure(**changes: Any) -> Policy:
    """Change the policy (fields of `Policy`) and return it. Clients made before keep the policy
    they were made with: call it before the first request (or clear `_clients`)."""
    global policy
    unknown = set(changes) - {f.name for f in dataclasses.fields(Policy)}
    if unknown:
        raise TypeError(f"unknown policy field(s): {', '.join(sorted(unknown))}")
    if "limits" in changes:
        changes["limits"] = {k.rstrip("/"): v for k, v in changes["limits"].items()}
    maxima = list(changes.get("limits", {}).values())
    if "max_in_flight" in changes:
        maxima.append(changes["max_in_flight"])
    for value in maxima:
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"a maximum in flight must be a positive int, got {value!r}")
    for key in ("requests_per_minute", "tokens_per_minute"):
        value = changes.get(key)
        if value is not None and (not isinstance(value, (int, float)) or value <= 0):
            raise ValueError(f"{key} must be a positive number or None, got {value!r}")
    if not isinstance(changes.get("max_retries", 0), int) or changes.get("max_retries", 0) < 0:
        raise ValueError(f"max_retries must be a non-negative int, got {changes['max_retries']!r}")
    policy = dataclasses.replace(policy, **changes)
    return policy


# ---------------------------------------------------------------------------------------------
# The HTTP layer: connection limits, rate limits, logging

def _estimate_tokens(request: httpx2.Request) -> int:
    """Tokens a request may use: its body's bytes / 4 plus the completion it asks for."""
    body = request.content or b""
    try:
        data = _json.loads(body) if body else {}
    except ValueError:
        data = {}
    out = 0
    if isinstance(data, dict):
        out = data.get("max_completion_tokens") or data.get("max_tokens") or 0
    return max(1, math.ceil(len(body) / 4) + (out if isinstance(out, int) else 0))


class _Limited(httpx2.AsyncBaseTransport):
    """An HTTP transport that waits for the rate limits before each attempt and logs what it
    waited for, failed responses and connection failures."""

    def __init__(self, endpoint: str, pol: Policy) -> None:
        self.endpoint = endpoint
        self.inner = httpx2.AsyncHTTPTransport(limits=_limits(endpoint, pol))
        self.rpm = pol.limiter(pol.requests_per_minute, 60.0) if pol.requests_per_minute else None
        self.tpm = pol.limiter(pol.tokens_per_minute, 60.0) if pol.tokens_per_minute else None
        self.tpm_max = pol.tokens_per_minute

    async def _wait(self, limiter, amount: float, what: str) -> None:
        if not limiter.has_capacity(amount):
            log.info("rate limit: waiting for the %s limit of %s", what, self.endpoint)
        await limiter.acquire(amount)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self.rpm is not None:
            await self._wait(self.rpm, 1, "requests-per-minute")
        if self.tpm is not None:
            await self._wait(self.tpm, min(_estimate_tokens(request), self.tpm_max),
                             "tokens-per-minute")
        attempt = request.headers.get("x-stainless-retry-count", "0")
        try:
            response = await self.inner.handle_async_request(request)
        except httpx2.ConnectError as exc:
            # Said once per request (the SDK then retries, logged at INFO).
            log.log(logging.WARNING if attempt == "0" else logging.INFO,
                    "cannot connect to %s (%s; attempt %d); is the server running? "
                    "OPENAI_BASE_URL=%s", self.endpoint, exc, int(attempt) + 1,
                    os.environ.get("OPENAI_BASE_URL", "(unset)"))
            raise
        if response.status_code in (408, 409, 429) or response.status_code >= 500:
            wait = response.headers.get("retry-after-ms")
            wait = f"{float(wait) / 1000:g} s" if wait else response.headers.get("retry-after")
            log.info("%s %s: %d (attempt %d%s)", request.method, request.url,
                     response.status_code, int(attempt) + 1,
                     f", Retry-After {wait}" if wait else "")
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def _limits(endpoint: str, pol: Policy) -> httpx2.Limits:
    n = pol.limit(endpoint)
    return httpx2.Limits(max_connections=n, max_keepalive_connections=n)


def _timeout(pol: Policy) -> httpx2.Timeout:
    # No pool timeout: a request waiting for one of the endpoint's connections is not failing.
    return httpx2.Timeout(pol.timeout, pool=None)


# ---------------------------------------------------------------------------------------------
# Per-loop clients

_clients: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, openai.AsyncOpenAI]" = \
    weakref.WeakKeyDictionary()
_http_clients: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict]" = \
    weakref.WeakKeyDictionary()

_NO_ENDPOINT = ("poppy_jit.ai: no endpoint to call: set OPENAI_BASE_URL to an OpenAI-compatible "
                "server (the simulator: run `python -m poppy_jit.sim`, it prints the export "
                "line), or OPENAI_API_KEY to use api.openai.com")


def client(loop: asyncio.AbstractEventLoop | None = None) -> openai.AsyncOpenAI:
    """The AsyncOpenAI client of `loop` (default: the running loop), created on first use."""
    loop = loop or asyncio.get_running_loop()
    c = _clients.get(loop)
    if c is None:
        base_url = os.environ.get("OPENAI_BASE_URL") or None
        api_key = os.environ.get("OPENAI_API_KEY")
        if base_url is None and not api_key:
            raise MissingEndpointError(_NO_ENDPOINT)
        endpoint = (base_url or "https://api.openai.com/v1").rstrip("/")
        pol = policy
        http = httpx2.AsyncClient(transport=_Limited(endpoint, pol), timeout=_timeout(pol),
                                  follow_redirects=True)
        c = openai.AsyncOpenAI(api_key=api_key or "sk-poppy-sim", base_url=base_url,
                               max_retries=pol.max_retries, timeout=_timeout(pol),
                               http_client=http)
        _clients[loop] = c
    return c


def http_client(url: str = "", loop: asyncio.AbstractEventLoop | None = None) -> httpx2.AsyncClient:
    """The httpx2.AsyncClient of `loop` (default: the running loop) for `url`'s endpoint
    (scheme://host:port), created on first use with that endpoint's limits."""
    loop = loop or asyncio.get_running_loop()
    parts = urlsplit(url)
    endpoint = f"{parts.scheme}://{parts.netloc}"
    per_loop = _http_clients.setdefault(loop, {})
    c = per_loop.get(endpoint)
    if c is None:
        c = per_loop[endpoint] = httpx2.AsyncClient(transport=_Limited(endpoint, policy),
                                                    timeout=_timeout(policy))
    return c


def warm_up() -> None:
    """Create this thread's client and import the SDK's lazily loaded modules now, the way a
    program that builds its client at start-up would, so the first request does not pay for it."""
    from ._loop import get_loop

    client(get_loop()).chat.completions  # noqa: B018 (attribute access triggers the lazy import)


def _messages(prompt: str, system: str | None) -> list:
    messages = [{"role": "system", "content": system}] if system is not None else []
    messages.append({"role": "user", "content": prompt})
    return messages


def _explained(exc: BaseException, c: openai.AsyncOpenAI) -> BaseException:
    if isinstance(exc, openai.APIConnectionError) and not isinstance(exc, openai.APITimeoutError):
        exc.add_note(f"poppy_jit.ai: could not connect to {c.base_url} after "
                     f"{policy.max_retries} retries; set OPENAI_BASE_URL to a running server "
                     "(`python -m poppy_jit.sim` starts one and prints the line to export)")
    return exc


# ---------------------------------------------------------------------------------------------
# Components

@unordered
async def llm(prompt: str, *, model: str = "sim-1", system: str | None = None,
              **kw: Any) -> str | tuple[str, ...]:
    """Send one user `prompt` (after an optional `system` message); return the reply text, or the
    tuple of the n replies when `n` > 1 (immutable, so operations on it need no ordering).

    Extra keyword arguments (temperature, max_tokens, n, ...) go to `chat.completions.create`.
    """
    c = client()
    try:
        resp = await c.chat.completions.create(model=model, messages=_messages(prompt, system),
                                               **kw)
    except openai.APIConnectionError as exc:
        raise _explained(exc, c)
    texts = [ch.message.content or "" for ch in resp.choices]
    return tuple(texts) if kw.get("n", 1) > 1 else texts[0]


@unordered
async def llm_stream(prompt: str, *, model: str = "sim-1", system: str | None = None,
                     **kw: Any) -> str:
    """Like `llm`, but the reply is streamed (server-sent events) and assembled; the whole text is
    returned once the stream ends. A failure before the first chunk is retried by the SDK."""
    c = client()
    try:
        stream = await c.chat.completions.create(model=model, messages=_messages(prompt, system),
                                                 stream=True, **kw)
    except openai.APIConnectionError as exc:
        raise _explained(exc, c)
    parts = []
    async for chunk in stream:
        for choice in chunk.choices:
            if choice.index == 0 and choice.delta.content:
                parts.append(choice.delta.content)
    return "".join(parts)


@unordered
async def embed(texts: str | list[str], *, model: str = "sim-embed", **kw: Any) -> Any:
    """Embedding vectors: one list of floats for a str, a list of them for a list of texts."""
    single = isinstance(texts, str)
    inputs = [texts] if single else list(texts)
    c = client()
    try:
        resp = await c.embeddings.create(model=model, input=inputs, **kw)
    except openai.APIConnectionError as exc:
        raise _explained(exc, c)
    vectors = [d.embedding for d in sorted(resp.data, key=lambda d: d.index)]
    return vectors[0] if single else vectors


def _retry_delay(response: httpx2.Response | None, retries_taken: int) -> float | None:
    """The SDK's rule for `response` (None: a timeout or connection error): seconds to wait before
    retrying, or None not to retry."""
    if response is not None:
        should = response.headers.get("x-should-retry")
        code = response.status_code
        if should == "false" or (should != "true" and code not in (408, 409, 429) and code < 500):
            return None
        for header, divisor in (("retry-after-ms", 1000), ("retry-after", 1)):
            value = response.headers.get(header)
            try:
                delay = float(value) / divisor if value is not None else None
            except ValueError:  # an HTTP date
                parsed = email.utils.parsedate_tz(value) if header == "retry-after" else None
                delay = email.utils.mktime_tz(parsed) - time.time() if parsed else None
            if delay is not None:
                if delay > _MAX_RETRY_AFTER:
                    return None
                if delay > 0:
                    return delay
                break
    delay = min(_INITIAL_RETRY_DELAY * 2.0 ** retries_taken, _MAX_RETRY_DELAY)
    return delay * (1 - 0.25 * random.random())


@unordered
async def http_json(method: str, url: str, *, json: Any = None, params: dict | None = None,
                    headers: dict | None = None) -> Any:
    """An HTTP request whose answer is JSON (parsed and returned); a 4xx/5xx status raises
    httpx2.HTTPStatusError once retries are exhausted (at once for one that is not retried).

    It is unordered: use it for requests without side effects the program depends on, and wrap
    side-effecting ones (a POST that creates something) in your own @sequential function."""
    c = http_client(url)
    for retries_taken in range(policy.max_retries + 1):
        last = retries_taken == policy.max_retries
        try:
            resp = await c.request(method, url, json=json, params=params, headers=headers)
        except (httpx2.TimeoutException, httpx2.TransportError):
            delay = None if last else _retry_delay(None, retries_taken)
            if delay is None:
                raise
        else:
            if resp.status_code < 400:
                return resp.json()
            delay = None if last else _retry_delay(resp, retries_taken)
            if delay is None:
                resp.raise_for_status()
        log.info("retrying %s %s in %.2f s (retry %d of %d)", method, url, delay,
                 retries_taken + 1, policy.max_retries)
        await asyncio.sleep(delay)
    raise AssertionError("unreachable")
