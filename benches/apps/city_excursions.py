"""CityExcursions (OPAL §2): list cities, then one LLM call per city, printing as it goes."""
import asyncio

from poppy_jit import poppy
from poppy_jit.bench.ext import allm, llm

PARAMS = {"region": "Oceania"}


@poppy
def city_excursions(region):
    cities = llm(f"List cities in {region}").split("\n")
    for city in cities:
        print(city)
        excursions = llm(f"Excursions in {city}")
        print(excursions)


def run(region):
    return city_excursions(region)


async def run_manual(region):
    cities = (await allm(f"List cities in {region}")).split("\n")
    excursions = await asyncio.gather(*(allm(f"Excursions in {c}") for c in cities))
    for city, exc in zip(cities, excursions):
        print(city)
        print(exc)
