"""poppy_jit.ai components against the simulator: the SDK's retries (429/408/409/5xx/timeouts,
Retry-After, retry-after-ms, x-should-retry), the HTTP client's connection limit per endpoint,
requests/tokens-per-minute limiters (injected for determinism), logging, streaming, embeddings,
n choices and http_json."""
import asyncio
import logging
import time

import httpx2
import openai
import pytest

from poppy_jit import _loop, ai
from poppy_jit.sim import Fault, LatencyModel, SimServer, city_excursions, embedding


def _close_clients():
    for loop, c in list(ai._clients.items()):  # close pooled connections
        loop.run_until_complete(c.close())
    for loop, per_endpoint in list(ai._http_clients.items()):
        for c in per_endpoint.values():
            loop.run_until_complete(c.aclose())
    ai._clients.clear()
    ai._http_clients.clear()


@pytest.fixture
def sim(monkeypatch):
    saved = ai.policy
    ai.configure(timeout=5.0)
    with SimServer(city_excursions, LatencyModel(ttft=0.05, per_token=0.0)) as s:
        monkeypatch.setenv("OPENAI_BASE_URL", s.base_url)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        _close_clients()
        yield s
        _close_clients()
    ai.policy = saved


def run(coro):
    return _loop.run_sync(coro)


def fn(external):
    """The undecorated coroutine function of an @unordered external."""
    return external.__poppy_external__.fn


def test_components_are_unordered_async_externals():
    for f in (ai.llm, ai.llm_stream, ai.embed, ai.http_json):
        spec = f.__poppy_external__
        assert spec.kind == "unordered" and spec.is_async and not spec.blocking


def test_the_sdk_retries_are_on_and_its_http_client_is_ours(sim):
    ai.llm("hello")
    c = ai._clients[_loop.get_loop()]
    assert c.max_retries == ai.policy.max_retries == 4
    assert isinstance(c._client, httpx2.AsyncClient)
    assert isinstance(c._client._transport, ai._Limited)


def test_429_retried_by_the_sdk_after_retry_after(sim, caplog):
    sim.faults.append(Fault(429, match="Oceania", first=2, retry_after=0.2))
    with caplog.at_level(logging.INFO, logger="poppy_jit"):
        assert ai.llm("List cities in Oceania").startswith("Sydney\n")
    recs = sim.requests
    assert [r.status for r in recs] == [429, 429, 200]
    for i in range(2):
        assert recs[i + 1].start - recs[i].end >= 0.19
    logged = [r.getMessage() for r in caplog.records if r.name == "poppy_jit.ai"]
    assert len(logged) == 2 and "429 (attempt 1, Retry-After 0.2)" in logged[0]
    assert "429 (attempt 2, Retry-After 0.2)" in logged[1]


def test_retry_after_ms_is_preferred(sim):
    sim.faults.append(Fault(429, first=1, retry_after=30, retry_after_ms=150))
    ai.llm("hello")
    recs = sim.requests
    assert [r.status for r in recs] == [429, 200]
    assert 0.14 <= recs[1].start - recs[0].end < 5


def test_x_should_retry_and_408_409(sim):
    sim.faults += [Fault(503, match="no", first=1, should_retry=False),
                   Fault(409, match="lock", first=1, retry_after=0.01),
                   Fault(408, match="slow", first=1, retry_after=0.01),
                   Fault(400, match="yes", first=1, should_retry=True, retry_after=0.01)]
    with pytest.raises(openai.InternalServerError):
        ai.llm("no retry")
    for prompt in ("lock", "slow", "yes please"):
        ai.llm(prompt)
    assert [r.status for r in sim.requests] == [503, 409, 200, 408, 200, 400, 200]


def test_5xx_and_timeouts_are_retried(sim):
    ai.configure(timeout=0.3)
    sim.faults += [Fault(500, match="Perth", first=1, retry_after=0.01),
                   Fault(503, match="Perth", first=1, retry_after=0.01),
                   Fault(0, match="Suva", first=1, hang=1.0)]
    assert ai.llm("Excursions in Perth").startswith("In Perth,")
    assert ai.llm("Excursions in Suva").startswith("In Suva,")
    statuses = [(r.prompt.split()[-1], r.status) for r in sim.requests]
    assert statuses.count(("Perth", 200)) == 1 and ("Perth", 500) in statuses \
        and ("Perth", 503) in statuses
    assert ("Suva", 200) in statuses


def test_retries_are_bounded_and_the_last_error_raised(sim):
    ai.configure(max_retries=2)
    sim.faults.append(Fault(429, match="always", first=100, retry_after=0.01))
    with pytest.raises(openai.RateLimitError):
        ai.llm("always busy")
    assert len(sim.requests) == 3


def test_client_errors_are_not_retried(sim):
    sim.faults.append(Fault(400, match="bad", first=5))
    with pytest.raises(openai.BadRequestError):
        ai.llm("bad request")
    assert len(sim.requests) == 1


def test_max_in_flight_per_endpoint_is_never_exceeded(sim):
    ai.configure(limits={sim.base_url: 3})
    sim.faults.append(Fault(429, match="C2", first=1, retry_after=0.01))  # a retry too

    async def many():
        return await asyncio.gather(*[fn(ai.llm)(f"Excursions in C{i}") for i in range(10)])

    out = run(many())
    assert [o.split(",")[0] for o in out] == [f"In C{i}" for i in range(10)]
    assert sim.max_concurrent == 3  # reached, never exceeded
    assert max(r.concurrent for r in sim.requests) == 3 and len(sim.requests) == 11


def test_default_limit_allows_full_overlap(sim):
    async def many():
        return await asyncio.gather(*[fn(ai.llm)(f"Excursions in D{i}") for i in range(6)])

    run(many())
    assert sim.max_concurrent == 6


class RecordingLimiter:
    """An injected limiter: never waits, records what was acquired."""

    made: list = []

    def __init__(self, max_rate, time_period):
        self.rate, self.period, self.acquired = max_rate, time_period, []
        RecordingLimiter.made.append(self)

    def has_capacity(self, amount=1):
        return True

    async def acquire(self, amount=1):
        self.acquired.append(amount)


def test_rate_limiters_see_every_attempt(sim):
    RecordingLimiter.made = []
    ai.configure(requests_per_minute=100, tokens_per_minute=10_000, limiter=RecordingLimiter)
    sim.faults.append(Fault(429, first=1, retry_after=0.01))
    ai.llm("Excursions in Lima", max_tokens=50)
    rpm, tpm = RecordingLimiter.made
    assert (rpm.rate, rpm.period, tpm.rate, tpm.period) == (100, 60.0, 10_000, 60.0)
    assert rpm.acquired == [1, 1]  # the retry counts too
    assert len(tpm.acquired) == 2 and all(50 < t < 150 for t in tpm.acquired)


def test_requests_per_minute_spaces_requests(sim, caplog):
    import aiolimiter

    # aiolimiter itself, its minute scaled to 0.5 s: 2 at once, then one every 0.25 s.
    ai.configure(requests_per_minute=2,
                 limiter=lambda rate, period: aiolimiter.AsyncLimiter(rate, period / 120))

    async def many():
        return await asyncio.gather(*[fn(ai.llm)(f"Excursions in R{i}") for i in range(4)])

    t0 = time.perf_counter()  # the simulator's clock
    with caplog.at_level(logging.INFO, logger="poppy_jit"):
        run(many())
    starts = sorted(r.start for r in sim.requests)
    # Measured from before the first acquire (a late first request cannot shrink the gaps).
    assert starts[2] - t0 >= 0.2 and starts[3] - t0 >= 0.45
    assert any("waiting for the requests-per-minute limit" in r.getMessage()
               for r in caplog.records)


def test_missing_endpoint_says_what_to_set(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    ai._clients.clear()
    with pytest.raises(ai.MissingEndpointError, match="set OPENAI_BASE_URL") as err:
        ai.llm("hello")
    assert "python -m poppy_jit.sim" in str(err.value)


def test_refused_connection_is_logged_and_explained(monkeypatch, caplog):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    saved = ai.policy
    ai.configure(max_retries=0)
    _close_clients()
    try:
        with caplog.at_level(logging.INFO, logger="poppy_jit"):
            with pytest.raises(openai.APIConnectionError) as err:
                ai.llm("hello")
    finally:
        ai.policy = saved
        _close_clients()
    assert any("cannot connect to" in r.getMessage() for r in caplog.records)
    assert any("set OPENAI_BASE_URL" in n for n in err.value.__notes__)


def test_n_choices_return_a_tuple(sim):
    out = ai.llm("List cities in Europe", n=2)
    assert isinstance(out, tuple) and len(out) == 2 and out[0].startswith("Lisbon")


def test_llm_stream_equals_llm(sim):
    streamed = ai.llm_stream("Excursions in Quito")
    assert streamed == ai.llm("Excursions in Quito")
    assert sim.requests[0].params.get("stream") is True


def test_llm_stream_retries_before_the_stream(sim):
    sim.faults.append(Fault(429, match="Quito", first=1, retry_after=0.01))
    assert ai.llm_stream("Excursions in Quito").startswith("In Quito,")
    assert [r.status for r in sim.requests] == [429, 200]


def test_embed(sim):
    assert ai.embed("alpha") == pytest.approx(embedding("alpha"))
    vecs = ai.embed(["alpha", "beta"], dimensions=4)
    assert len(vecs) == 2 and vecs[1] == pytest.approx(embedding("beta", 4))


def test_http_json(sim):
    models = ai.http_json("GET", sim.base_url + "/models")
    assert models["data"][0]["id"] == "sim-1"
    sim.faults.append(Fault(503, first=1, retry_after=0.01))
    body = ai.http_json("POST", sim.base_url + "/embeddings", json={"input": "x"})
    assert body["data"][0]["embedding"] == pytest.approx(embedding("x"))
    assert [r.status for r in sim.requests] == [503, 200]
    with pytest.raises(httpx2.HTTPStatusError) as err:
        ai.http_json("GET", sim.base_url + "/nothing")
    assert err.value.response.status_code == 404


def test_http_json_follows_the_sdk_retry_rules():
    def resp(code, **headers):
        return httpx2.Response(code, headers=headers)

    assert ai._retry_delay(resp(400), 0) is None
    assert ai._retry_delay(resp(400, **{"x-should-retry": "true", "retry-after": "1"}), 0) == 1.0
    assert ai._retry_delay(resp(503, **{"x-should-retry": "false"}), 0) is None
    assert ai._retry_delay(resp(429, **{"retry-after-ms": "250", "retry-after": "9"}), 0) == 0.25
    assert ai._retry_delay(resp(429, **{"retry-after": "120"}), 0) is None  # too long: give up
    import email.utils
    import time
    date = email.utils.formatdate(time.time() + 3, usegmt=True)
    assert 1.0 < ai._retry_delay(resp(429, **{"retry-after": date}), 0) <= 3.0
    for code in (408, 409, 500):
        assert 0.375 <= ai._retry_delay(resp(code), 0) <= 0.5
    assert 3.0 <= ai._retry_delay(None, 3) <= 4.0


def test_configure_validates():
    saved = ai.policy
    try:
        with pytest.raises(TypeError):
            ai.configure(nonsense=1)
        with pytest.raises(ValueError):
            ai.configure(max_in_flight=0)
        with pytest.raises(ValueError):
            ai.configure(limits={"http://x": -1})
        with pytest.raises(ValueError):
            ai.configure(requests_per_minute=0)
        with pytest.raises(ValueError):
            ai.configure(max_retries=-1)
        assert ai.configure(limits={"http://x/": 2}).limit("http://x") == 2
    finally:
        ai.policy = saved
