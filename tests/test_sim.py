"""poppy_jit.sim: the simulated OpenAI-compatible service, driven by the official SDK."""
import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

import openai
import pytest

import poppy_jit
from hypothesis import given, strategies as st

from poppy_jit.sim import APPS, LatencyModel, SimServer, city_excursions, count_tokens, echo


def user(text):
    return [{"role": "user", "content": text}]


def test_city_excursions_responder():
    cities = city_excursions(user("List cities in Oceania"), "m", {}).split("\n")
    assert len(cities) == 8 and all(c and c.strip() == c for c in cities)
    assert cities[0] == "Sydney"
    unknown = city_excursions(user("List cities in Atlantis"), "m", {}).split("\n")
    assert len(unknown) == 8 and unknown == city_excursions(user("List cities in Atlantis"),
                                                            "m", {}).split("\n")
    para = city_excursions(user("Excursions in Perth"), "m", {})
    assert para.startswith("In Perth,") and "\n" not in para and count_tokens(para) > 30
    assert para != city_excursions(user("Excursions in Suva"), "m", {})
    assert city_excursions(user("hello"), "m", {}) == echo(user("hello"), "m", {})


def test_echo_depends_on_whole_conversation():
    a = echo(user("x"), "m", {})
    assert a.endswith(": x")
    assert a != echo([{"role": "system", "content": "s"}] + user("x"), "m", {})


@given(st.text(max_size=40), st.floats(0, 0.9), st.integers(0, 5), st.floats(0.1, 3))
def test_latency_model_deterministic_and_bounded(prompt, jitter, seed, scale):
    lm = LatencyModel(ttft=0.1, per_token=0.01, jitter=jitter, seed=seed, time_scale=scale)
    text = "a b c d"
    lat = lm.latency(user(prompt), "m", text)
    assert lat == lm.latency(user(prompt), "m", text)
    base = (0.1 + 0.04) * scale
    assert base * (1 - jitter) - 1e-9 <= lat <= base * (1 + jitter) + 1e-9


def test_jitter_varies_with_content():
    lm = LatencyModel(ttft=1.0, per_token=0.0, jitter=0.5)
    assert len({lm.latency(user(f"p{i}"), "m", "") for i in range(10)}) > 5


def test_sdk_roundtrip_concurrency_and_log():
    lat = LatencyModel(ttft=0.2, per_token=0.0)
    with SimServer(city_excursions, lat) as sim:
        assert sim.base_url.startswith("http://127.0.0.1:") and sim.port > 0

        async def main():
            client = openai.AsyncOpenAI(base_url=sim.base_url, api_key="dummy")
            r = await client.chat.completions.create(
                model="sim-1", messages=user("List cities in Europe"), temperature=0.5)
            t0 = time.perf_counter()
            many = await asyncio.gather(*[client.chat.completions.create(
                model="sim-1", messages=user(f"Excursions in C{i}")) for i in range(10)])
            elapsed = time.perf_counter() - t0
            await client.close()
            return r, many, elapsed

        first, many, elapsed = asyncio.run(main())
        log = sim.requests
    assert first.choices[0].message.content.split("\n")[0] == "Lisbon"
    assert first.choices[0].finish_reason == "stop" and first.object == "chat.completion"
    assert first.usage.completion_tokens == 8 and first.model == "sim-1"
    assert [m.choices[0].message.content.split(",")[0] for m in many] == \
        [f"In C{i}" for i in range(10)]
    assert elapsed < 1.0  # ten 0.2 s requests served concurrently, not one after another
    assert len(log) == 11 and log[0].prompt == "List cities in Europe"
    assert log[0].params == {"temperature": 0.5}
    starts = sorted(r.start for r in log[1:])
    ends = sorted(r.end for r in log[1:])
    assert starts[-1] < ends[0]  # all ten were in service at the same time
    assert all(0.2 <= r.latency < 0.5 and r.planned_latency == pytest.approx(0.2) for r in log)


def test_sync_sdk_and_errors():
    with SimServer(echo, LatencyModel(ttft=0.0, per_token=0.0)) as sim:
        client = openai.OpenAI(base_url=sim.base_url, api_key="dummy", max_retries=0)
        r = client.chat.completions.create(model="x", messages=user("ping"))
        assert r.choices[0].message.content.endswith(": ping")
        with pytest.raises(openai.NotFoundError, match="no route"):
            client.completions.create(model="x", prompt="p")  # legacy endpoint: not served
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(urllib.request.Request(
                sim.base_url + "/chat/completions", data=b"not json", method="POST"))
        assert err.value.code == 400
        with urllib.request.urlopen(sim.base_url + "/models") as resp:
            models = json.load(resp)
        client.close()
        assert models["data"][0]["id"] == "sim-1"
        sim.clear_log()
        assert sim.requests == []
    with pytest.raises(RuntimeError, match="not started"):
        sim.port


def test_time_scale_shortens_service():
    with SimServer(echo, LatencyModel(ttft=1.0, per_token=0.0, time_scale=0.05)) as sim:
        with openai.OpenAI(base_url=sim.base_url, api_key="d") as client:
            client.chat.completions.create(model="x", messages=user("q"))
        assert 0.05 <= sim.requests[0].latency < 0.5


def test_command_line_server():
    with subprocess.Popen([sys.executable, "-m", "poppy_jit.sim", "--port", "0", "--app",
                             "city_excursions", "--ttft", "0"], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=os.path.dirname(
                                os.path.dirname(poppy_jit.__file__)))) as proc:
        try:
            line = proc.stdout.readline()
            assert "serving at http://127.0.0.1:" in line
            base_url = line.split("serving at ")[1].strip()
            with openai.OpenAI(base_url=base_url, api_key="d") as client:
                r = client.chat.completions.create(
                    model="x", messages=user("List cities in South America"))
            assert r.choices[0].message.content.startswith("Cusco\n")
        finally:
            proc.terminate()
    assert set(APPS) == {"city_excursions", "echo"}
