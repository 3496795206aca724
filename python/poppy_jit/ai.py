"""`llm(prompt)`: an `@unordered` chat-completion call through the official OpenAI SDK.

The endpoint comes from OPENAI_BASE_URL (e.g. a `poppy_jit.sim` server) and the key from
OPENAI_API_KEY (a dummy by default, which the simulator accepts).  `openai.AsyncOpenAI` clients
are bound to the event loop they first ran on, so one client is kept per loop.
"""
from __future__ import annotations

import asyncio
import os
import weakref

import openai

from ._decorators import unordered

__all__ = ["llm", "client", "warm_up"]

_clients: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, openai.AsyncOpenAI]" = \
    weakref.WeakKeyDictionary()


def client(loop: asyncio.AbstractEventLoop | None = None) -> openai.AsyncOpenAI:
    """The AsyncOpenAI client of `loop` (default: the running loop), created on first use."""
    loop = loop or asyncio.get_running_loop()
    c = _clients.get(loop)
    if c is None:
        c = openai.AsyncOpenAI(api_key=os.environ.get("OPENAI_API_KEY", "sk-poppy-sim"),
                               base_url=os.environ.get("OPENAI_BASE_URL"))
        _clients[loop] = c
    return c


def warm_up() -> None:
    """Create this thread's client and import the SDK's lazily loaded modules now, the way a
    program that builds its client at start-up would, so the first request does not pay for it."""
    from ._loop import get_loop

    client(get_loop()).chat.completions  # noqa: B018 (attribute access triggers the lazy import)


@unordered
async def llm(prompt: str, *, model: str = "sim-1", system: str | None = None, **kw) -> str:
    """Send one user `prompt` (after an optional `system` message); return the reply text.

    Extra keyword arguments (temperature, max_tokens, ...) go to `chat.completions.create`.
    """
    messages = [{"role": "system", "content": system}] if system is not None else []
    messages.append({"role": "user", "content": prompt})
    resp = await client().chat.completions.create(model=model, messages=messages, **kw)
    return resp.choices[0].message.content or ""
