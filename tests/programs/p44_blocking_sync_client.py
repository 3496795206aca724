# A blocking synchronous SDK client (openai.OpenAI against the in-process simulator) wrapped in
# @unordered(blocking=True) runs on worker threads: the requests overlap.
# difftest: min_in_flight=3
import openai

from poppy_jit import poppy, unordered
from poppy_jit.sim import LatencyModel, SimServer, city_excursions
from _ext import _traced, log

sim = SimServer(city_excursions, LatencyModel(ttft=0.15, per_token=0.0))
sim.start()
client = openai.OpenAI(base_url=sim.base_url, api_key="sim", max_retries=0)


@unordered(blocking=True)
def ask(prompt):
    with _traced("lookup", "unordered", prompt):  # traced under a name the harness knows
        r = client.chat.completions.create(model="sim-1",
                                           messages=[{"role": "user", "content": prompt}])
        return r.choices[0].message.content


@poppy
def plan(region):
    cities = ask(f"List cities in {region}").split("\n")
    out = []
    n = 0
    for c in cities:
        if n < 4:
            out.append(f"{c}: {len(ask(f'Excursions in {c}'))}")
        n += 1
    log("planned")
    return out


for line in plan("Europe"):
    print(line)
client.close()
sim.stop()
