"""poppy_jit.ai.llm against the simulator."""
import asyncio

import pytest

from poppy_jit import _loop, ai
from poppy_jit.sim import LatencyModel, SimServer, city_excursions


@pytest.fixture
def sim(monkeypatch):
    with SimServer(city_excursions, LatencyModel(ttft=0.05, per_token=0.0)) as s:
        monkeypatch.setenv("OPENAI_BASE_URL", s.base_url)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        ai._clients.clear()
        yield s
        for loop, client in list(ai._clients.items()):  # close pooled connections
            loop.run_until_complete(client.close())
    ai._clients.clear()


def test_llm_is_an_unordered_async_external():
    spec = ai.llm.__poppy_external__
    assert spec.kind == "unordered" and spec.is_async and not spec.blocking


def test_llm_plain_call(sim):
    assert ai.llm("List cities in Oceania").split("\n")[:2] == ["Sydney", "Melbourne"]
    ai.llm("Excursions in Perth", system="be brief", model="sim-2", temperature=0)
    rec = sim.requests[-1]
    assert rec.model == "sim-2" and rec.params["temperature"] == 0
    assert rec.messages == [{"role": "system", "content": "be brief"},
                            {"role": "user", "content": "Excursions in Perth"}]


def test_one_client_per_loop_reused_across_calls(sim):
    ai.llm("a")
    ai.llm("b")
    assert list(ai._clients) == [_loop.get_loop()]

    async def inside_another_loop():
        text = await ai.llm.__poppy_external__.fn("c")
        assert len(ai._clients) == 2
        await ai.client().close()  # this loop ends with asyncio.run
        return text, asyncio.get_running_loop()

    text, other = asyncio.run(inside_another_loop())
    assert text.endswith(": c") and other is not _loop.get_loop()


def test_concurrent_llm_calls_overlap(sim):
    async def many():
        return await asyncio.gather(*[ai.llm.__poppy_external__.fn(f"Excursions in C{i}")
                                      for i in range(6)])

    out = _loop.run_sync(many())
    assert [o.split(",")[0] for o in out] == [f"In C{i}" for i in range(6)]
    recs = sim.requests
    assert max(r.start for r in recs) < min(r.end for r in recs)
