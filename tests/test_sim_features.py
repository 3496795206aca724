"""poppy_jit.sim: streaming (SSE), embeddings, n choices, injected faults, max concurrency —
driven by the official SDK."""
import time
import threading

import openai
import pytest

from poppy_jit.sim import Fault, LatencyModel, SimServer, city_excursions, embedding, echo


def user(text):
    return [{"role": "user", "content": text}]


def test_streaming_assembles_to_the_plain_answer_token_by_token():
    with SimServer(city_excursions, LatencyModel(ttft=0.05, per_token=0.002)) as sim, \
            openai.OpenAI(base_url=sim.base_url, api_key="d", max_retries=0) as c:
        chunks = list(c.chat.completions.create(model="m", messages=user("Excursions in Perth"),
                                                stream=True))
        plain = c.chat.completions.create(model="m", messages=user("Excursions in Perth"))
        text = "".join(ch.choices[0].delta.content or "" for ch in chunks)
        assert text == plain.choices[0].message.content
        assert len(chunks) >= len(text.split())  # one chunk per token (plus role and stop)
        assert chunks[-1].choices[0].finish_reason == "stop"
        stream_rec = sim.requests[0]
        assert stream_rec.params["stream"] is True and stream_rec.response == text
        assert stream_rec.latency >= 0.05 + 0.002 * len(text.split()) * 0.9


def test_n_choices_are_distinct_and_deterministic():
    with SimServer(echo, LatencyModel(ttft=0, per_token=0)) as sim, \
            openai.OpenAI(base_url=sim.base_url, api_key="d", max_retries=0) as c:
        r = c.chat.completions.create(model="m", messages=user("q"), n=3)
        again = c.chat.completions.create(model="m", messages=user("q"), n=3)
    texts = [ch.message.content for ch in r.choices]
    assert [ch.index for ch in r.choices] == [0, 1, 2] and len(set(texts)) == 3
    assert texts == [ch.message.content for ch in again.choices]
    assert texts[0] == echo(user("q"), "m", {})


def test_embeddings_are_deterministic_unit_vectors():
    with SimServer(echo, LatencyModel(ttft=0, per_token=0)) as sim, \
            openai.OpenAI(base_url=sim.base_url, api_key="d", max_retries=0) as c:
        r = c.embeddings.create(model="e", input=["alpha", "beta", "alpha"], dimensions=16)
        single = c.embeddings.create(model="e", input="alpha", dimensions=16)
    vecs = [d.embedding for d in r.data]
    assert len(vecs) == 3 and all(len(v) == 16 for v in vecs)
    assert vecs[0] == vecs[2] != vecs[1]
    assert vecs[0] == single.data[0].embedding == pytest.approx(embedding("alpha", 16))
    assert sum(x * x for x in vecs[1]) == pytest.approx(1.0)
    assert sim.requests[0].endpoint == "embeddings"


def test_fault_schedule_first_k_of_matching_prompt_then_every_nth():
    faults = [Fault(429, match="flaky", first=2, retry_after=0.5),
              Fault(500, match="sick", first=0, every=2)]
    with SimServer(echo, LatencyModel(ttft=0, per_token=0), faults=faults) as sim, \
            openai.OpenAI(base_url=sim.base_url, api_key="d", max_retries=0) as c:
        outcomes = []
        for prompt in ["flaky", "fine", "flaky", "flaky", "sick", "sick", "sick", "sick"]:
            try:
                c.chat.completions.create(model="m", messages=user(prompt))
                outcomes.append(200)
            except openai.RateLimitError as e:
                assert e.response.headers["retry-after"] == "0.5"
                outcomes.append(429)
            except openai.InternalServerError:
                outcomes.append(500)
    assert outcomes == [429, 200, 429, 200, 200, 500, 200, 500]
    assert [r.status for r in sim.requests] == outcomes


def test_timeout_fault_hangs_past_the_client_timeout():
    with SimServer(echo, LatencyModel(ttft=0, per_token=0),
                   faults=[Fault(0, match="slow", hang=1.0)]) as sim, \
            openai.OpenAI(base_url=sim.base_url, api_key="d", max_retries=0, timeout=0.2) as c:
        with pytest.raises(openai.APITimeoutError):
            c.chat.completions.create(model="m", messages=user("slow"))
        assert c.chat.completions.create(model="m", messages=user("slow")).choices


def test_max_concurrent_is_observed():
    with SimServer(echo, LatencyModel(ttft=1.5, per_token=0)) as sim:
        # Clients are built first (slow on a loaded machine), then all four requests go out.
        ready = threading.Barrier(4)

        def one(i):
            with openai.OpenAI(base_url=sim.base_url, api_key="d", max_retries=0) as c:
                ready.wait()
                c.chat.completions.create(model="m", messages=user(f"p{i}"))

        threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sim.max_concurrent == 4 == max(r.concurrent for r in sim.requests)
        # A client has its answer slightly before the handler leaves service; clear_log keeps
        # what is still in service, so wait for the handlers to finish first.
        deadline = time.monotonic() + 10
        while sim.in_service and time.monotonic() < deadline:
            time.sleep(0.01)
        sim.clear_log()
        assert sim.max_concurrent == 0
