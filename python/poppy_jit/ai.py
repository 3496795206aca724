"""AI components: `@unordered` async externals for LLM calls, embeddings and JSON HTTP APIs.

    llm(prompt, *, model, system, **kw) -> str (a tuple of n strings when n > 1)
    llm_stream(prompt, *, model, system, **kw) -> str   (assembled from the SSE stream)
    embed(texts, *, model, **kw) -> list[float] for a str, list[list[float]] for a list
    http_json(method, url, *, json=None, params=None, headers=None) -> parsed JSON

They use the official SDK (`openai.AsyncOpenAI`) and `httpx.AsyncClient`, configured like the SDK:
OPENAI_BASE_URL (e.g. a `poppy_jit.sim` server) and OPENAI_API_KEY (a dummy by default, which the
simulator accepts).  Clients are bound to the event loop they first ran on, so one is kept per
loop.

The request policy is ours (the SDK's own retries are off, max_retries=0):
* at most `max_in_flight` requests per endpoint at once (an asyncio.Semaphore per loop and
  endpoint; `configure(max_in_flight=..., limits={endpoint: n})`, or POPPY_AI_MAX_IN_FLIGHT);
* retries on 429, 5xx, timeouts and connection errors, with exponential backoff
  `min(backoff_max, backoff_base * 2**attempt)` scaled by a jitter factor in [0.5, 1] that is a
  deterministic function of (seed, request, attempt), honouring a 429's Retry-After (bounded by
  backoff_max); after `max_retries` retries the last error is raised.
"""
from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
import weakref
from typing import Any, Awaitable, Callable
from urllib.parse import urlsplit

import httpx
import openai

from ._decorators import unordered

__all__ = ["llm", "llm_stream", "embed", "http_json", "client", "http_client", "warm_up",
           "configure", "Policy", "policy"]


@dataclasses.dataclass
class Policy:
    """Concurrency and retry policy of the AI components (see module docstring)."""

    max_in_flight: int = int(os.environ.get("POPPY_AI_MAX_IN_FLIGHT", "64"))
    limits: dict = dataclasses.field(default_factory=dict)  # endpoint -> max in flight
    max_retries: int = 4
    backoff_base: float = 0.25  # seconds before the first retry (before jitter)
    backoff_max: float = 8.0
    timeout: float = 60.0  # per request, seconds
    seed: int = 0

    def limit(self, endpoint: str) -> int:
        return self.limits.get(endpoint.rstrip("/"), self.max_in_flight)

    def backoff(self, key: str, attempt: int, retry_after: float | None = None) -> float:
        """Delay before retry number `attempt` (0-based) of the request identified by `key`."""
        u = int.from_bytes(hashlib.sha256(f"{self.seed}|{key}|{attempt}".encode())
                           .digest()[:8], "big") / 2**64
        delay = min(self.backoff_max, self.backoff_base * 2**attempt) * (0.5 + 0.5 * u)
        if retry_after is not None:
            delay = max(delay, retry_after)
        return min(delay, self.backoff_max)


policy = Policy()


def configure(**changes: Any) -> Policy:
    """Change the policy (fields of `Policy`) and return it.  Call it before requests are in
    flight: the per-endpoint semaphores are rebuilt on next use."""
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
    policy = dataclasses.replace(policy, **changes)
    _semaphores.clear()
    return policy


# ---------------------------------------------------------------------------------------------
# Per-loop clients and semaphores

_clients: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, openai.AsyncOpenAI]" = \
    weakref.WeakKeyDictionary()
_http_clients: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient]" = \
    weakref.WeakKeyDictionary()
_semaphores: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict]" = \
    weakref.WeakKeyDictionary()


def client(loop: asyncio.AbstractEventLoop | None = None) -> openai.AsyncOpenAI:
    """The AsyncOpenAI client of `loop` (default: the running loop), created on first use."""
    loop = loop or asyncio.get_running_loop()
    c = _clients.get(loop)
    if c is None:
        c = openai.AsyncOpenAI(api_key=os.environ.get("OPENAI_API_KEY", "sk-poppy-sim"),
                               base_url=os.environ.get("OPENAI_BASE_URL"), max_retries=0)
        _clients[loop] = c
    return c


def http_client(loop: asyncio.AbstractEventLoop | None = None) -> httpx.AsyncClient:
    """The httpx.AsyncClient of `loop` (default: the running loop), created on first use."""
    loop = loop or asyncio.get_running_loop()
    c = _http_clients.get(loop)
    if c is None:
        c = httpx.AsyncClient()
        _http_clients[loop] = c
    return c


def _semaphore(endpoint: str) -> asyncio.Semaphore:
    per_loop = _semaphores.setdefault(asyncio.get_running_loop(), {})
    sem = per_loop.get(endpoint)
    if sem is None:
        sem = per_loop[endpoint] = asyncio.Semaphore(policy.limit(endpoint))
    return sem


def warm_up() -> None:
    """Create this thread's client and import the SDK's lazily loaded modules now, the way a
    program that builds its client at start-up would, so the first request does not pay for it."""
    from ._loop import get_loop

    client(get_loop()).chat.completions  # noqa: B018 (attribute access triggers the lazy import)


# ---------------------------------------------------------------------------------------------
# Retries

def _retry_after(response) -> float | None:
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _retryable(exc: BaseException) -> tuple[bool, float | None]:
    """(retry?, Retry-After seconds) for an error of the SDK or of httpx."""
    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError,
                        httpx.TimeoutException, httpx.TransportError)):
        return True, None
    if isinstance(exc, openai.APIStatusError):
        code, resp = exc.status_code, exc.response
    elif isinstance(exc, httpx.HTTPStatusError):
        code, resp = exc.response.status_code, exc.response
    else:
        return False, None
    if code == 429 or code >= 500:
        return True, _retry_after(resp) if code == 429 else None
    return False, None


async def _with_policy(endpoint: str, key: str, attempt_fn: Callable[[], Awaitable[Any]]):
    """Run `attempt_fn` under the endpoint's semaphore, retrying per the policy.  The semaphore
    is held only while a request is in flight, not during backoff."""
    sem = _semaphore(endpoint.rstrip("/"))
    for attempt in range(policy.max_retries + 1):
        async with sem:
            try:
                return await attempt_fn()
            except Exception as exc:
                retry, retry_after = _retryable(exc)
                if not retry or attempt == policy.max_retries:
                    raise
        await asyncio.sleep(policy.backoff(key, attempt, retry_after))


def _base_url(c: openai.AsyncOpenAI) -> str:
    return str(c.base_url)


def _messages(prompt: str, system: str | None) -> list:
    messages = [{"role": "system", "content": system}] if system is not None else []
    messages.append({"role": "user", "content": prompt})
    return messages


# ---------------------------------------------------------------------------------------------
# Components

@unordered
async def llm(prompt: str, *, model: str = "sim-1", system: str | None = None,
              **kw) -> str | tuple[str, ...]:
    """Send one user `prompt` (after an optional `system` message); return the reply text, or the
    tuple of the n replies when `n` > 1 (immutable, so operations on it need no ordering).

    Extra keyword arguments (temperature, max_tokens, n, ...) go to `chat.completions.create`.
    """
    c = client()
    messages = _messages(prompt, system)

    async def attempt():
        return await c.chat.completions.create(model=model, messages=messages,
                                                  timeout=policy.timeout, **kw)

    resp = await _with_policy(_base_url(c), f"chat|{model}|{prompt}", attempt)
    texts = [ch.message.content or "" for ch in resp.choices]
    return tuple(texts) if kw.get("n", 1) > 1 else texts[0]


@unordered
async def llm_stream(prompt: str, *, model: str = "sim-1", system: str | None = None,
                     **kw) -> str:
    """Like `llm`, but the reply is streamed (server-sent events) and assembled; the whole text is
    returned once the stream ends.  A failure before the first chunk is retried."""
    c = client()
    messages = _messages(prompt, system)

    async def attempt():
        stream = await c.chat.completions.create(model=model, messages=messages, stream=True,
                                                 timeout=policy.timeout, **kw)
        parts = []
        async for chunk in stream:
            for choice in chunk.choices:
                if choice.index == 0 and choice.delta.content:
                    parts.append(choice.delta.content)
        return "".join(parts)

    return await _with_policy(_base_url(c), f"stream|{model}|{prompt}", attempt)


@unordered
async def embed(texts, *, model: str = "sim-embed", **kw):
    """Embedding vectors: one list of floats for a str, a list of them for a list of texts."""
    single = isinstance(texts, str)
    inputs = [texts] if single else list(texts)
    c = client()

    async def attempt():
        return await c.embeddings.create(model=model, input=inputs,
                                           timeout=policy.timeout, **kw)

    resp = await _with_policy(_base_url(c), f"embed|{model}|{inputs!r}", attempt)
    vectors = [d.embedding for d in sorted(resp.data, key=lambda d: d.index)]
    return vectors[0] if single else vectors


@unordered
async def http_json(method: str, url: str, *, json: Any = None, params: dict | None = None,
                    headers: dict | None = None) -> Any:
    """An HTTP request whose answer is JSON (parsed and returned); a 4xx/5xx status raises
    httpx.HTTPStatusError once retries are exhausted (or at once for a 4xx other than 429).

    It is unordered: use it for requests without side effects the program depends on, and wrap
    side-effecting ones (a POST that creates something) in your own @sequential function."""
    parts = urlsplit(url)
    endpoint = f"{parts.scheme}://{parts.netloc}"
    c = http_client()

    async def attempt():
        resp = await c.request(method, url, json=json, params=params, headers=headers,
                               timeout=policy.timeout)
        resp.raise_for_status()
        return resp.json()

    return await _with_policy(endpoint, f"http|{method}|{url}|{json!r}|{params!r}", attempt)
