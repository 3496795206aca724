"""poppy_jit.ai components against the simulator: retries with backoff on 429/5xx/timeouts,
per-endpoint max in flight, streaming, embeddings, n choices and http_json."""
import asyncio
import dataclasses

import httpx
import openai
import pytest

from poppy_jit import _loop, ai
from poppy_jit.sim import Fault, LatencyModel, SimServer, city_excursions, embedding


@pytest.fixture
def sim(monkeypatch):
    saved = ai.policy
    ai.configure(backoff_base=0.02, backoff_max=0.3, timeout=5.0)
    with SimServer(city_excursions, LatencyModel(ttft=0.05, per_token=0.0)) as s:
        monkeypatch.setenv("OPENAI_BASE_URL", s.base_url)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        ai._clients.clear()
        ai._http_clients.clear()
        yield s
        for clients in (ai._clients, ai._http_clients):
            for loop, client in list(clients.items()):  # close pooled connections
                loop.run_until_complete(client.aclose() if isinstance(client, httpx.AsyncClient)
                                        else client.close())
            clients.clear()
    ai.policy = saved
    ai._semaphores.clear()


def run(coro):
    return _loop.run_sync(coro)


def fn(external):
    """The undecorated coroutine function of an @unordered external."""
    return external.__poppy_external__.fn


def test_components_are_unordered_async_externals():
    for f in (ai.llm, ai.llm_stream, ai.embed, ai.http_json):
        spec = f.__poppy_external__
        assert spec.kind == "unordered" and spec.is_async and not spec.blocking


def test_retries_429_with_deterministic_backoff(sim):
    sim.faults.append(Fault(429, match="Oceania", first=2))
    assert ai.llm("List cities in Oceania").startswith("Sydney\n")
    recs = sim.requests
    assert [r.status for r in recs] == [429, 429, 200]
    key = "chat|sim-1|List cities in Oceania"
    for i in range(2):
        gap = recs[i + 1].start - recs[i].end
        assert gap >= ai.policy.backoff(key, i) * 0.95
    assert ai.policy.backoff(key, 0) != ai.policy.backoff(key, 1)


def test_retry_after_is_honoured_but_bounded(sim):
    sim.faults.append(Fault(429, first=1, retry_after=0.2))
    ai.llm("hello")
    recs = sim.requests
    assert recs[1].start - recs[0].end >= 0.19
    assert ai.policy.backoff("k", 0, retry_after=100.0) == ai.policy.backoff_max


def test_5xx_and_timeouts_are_retried(sim):
    ai.configure(timeout=0.3)
    sim.faults += [Fault(500, match="Perth", first=1), Fault(503, match="Perth", first=1),
                   Fault(0, match="Suva", first=1, hang=1.0)]
    assert ai.llm("Excursions in Perth").startswith("In Perth,")
    assert ai.llm("Excursions in Suva").startswith("In Suva,")
    statuses = [(r.prompt.split()[-1], r.status) for r in sim.requests]
    assert statuses.count(("Perth", 200)) == 1 and ("Perth", 500) in statuses \
        and ("Perth", 503) in statuses
    assert ("Suva", 200) in statuses


def test_retries_are_bounded_and_the_last_error_raised(sim):
    ai.configure(max_retries=2)
    sim.faults.append(Fault(429, match="always", first=100))
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
    sim.faults.append(Fault(429, match="C2", first=1))  # a retry must respect the limit too

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


def test_n_choices_return_a_tuple(sim):
    out = ai.llm("List cities in Europe", n=2)
    assert isinstance(out, tuple) and len(out) == 2 and out[0].startswith("Lisbon")


def test_llm_stream_equals_llm(sim):
    streamed = ai.llm_stream("Excursions in Quito")
    assert streamed == ai.llm("Excursions in Quito")
    assert sim.requests[0].params.get("stream") is True


def test_llm_stream_retries_before_the_stream(sim):
    sim.faults.append(Fault(429, match="Quito", first=1))
    assert ai.llm_stream("Excursions in Quito").startswith("In Quito,")
    assert [r.status for r in sim.requests] == [429, 200]


def test_embed(sim):
    assert ai.embed("alpha") == pytest.approx(embedding("alpha"))
    vecs = ai.embed(["alpha", "beta"], dimensions=4)
    assert len(vecs) == 2 and vecs[1] == pytest.approx(embedding("beta", 4))


def test_http_json(sim):
    models = ai.http_json("GET", sim.base_url + "/models")
    assert models["data"][0]["id"] == "sim-1"
    sim.faults.append(Fault(503, first=1))
    body = ai.http_json("POST", sim.base_url + "/embeddings", json={"input": "x"})
    assert body["data"][0]["embedding"] == pytest.approx(embedding("x"))
    assert [r.status for r in sim.requests] == [503, 200]
    with pytest.raises(httpx.HTTPStatusError) as err:
        ai.http_json("GET", sim.base_url + "/nothing")
    assert err.value.response.status_code == 404


def test_policy_backoff_is_jittered_bounded_and_deterministic():
    p = ai.Policy(backoff_base=1.0, backoff_max=10.0, seed=1)
    delays = [p.backoff("req", a) for a in range(6)]
    for a, d in enumerate(delays):
        cap = min(10.0, 2.0 ** a)
        assert 0.5 * cap <= d <= cap
    assert delays == [p.backoff("req", a) for a in range(6)]
    assert delays != [dataclasses.replace(p, seed=2).backoff("req", a) for a in range(6)]


def test_configure_validates():
    saved = ai.policy
    try:
        with pytest.raises(TypeError):
            ai.configure(nonsense=1)
        with pytest.raises(ValueError):
            ai.configure(max_in_flight=0)
        with pytest.raises(ValueError):
            ai.configure(limits={"http://x": -1})
        assert ai.configure(limits={"http://x/": 2}).limit("http://x") == 2
    finally:
        ai.policy = saved
