# Reads of globals nothing rebinds (`llm`, `print`, `len`, a module) stay eager even when the
# module has a rebindable global (COUNTER): CityExcursions keeps its calls in flight at once.
# difftest: min_in_flight=4
import json

from poppy_jit import poppy
from _ext import llm, log

COUNTER = 0


def tick():
    global COUNTER
    COUNTER += 1


@poppy
def city_excursions(region):
    cities = llm(f"list: cities in {region}", n=5).split("\n")
    for city in cities:
        print(city, len(city))
        excursions = llm(f"Excursions in {city}")
        print(json.dumps(excursions))
    tick()
    log(f"ticks {COUNTER}")


city_excursions("Oceania")
