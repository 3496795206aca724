# CityExcursions (OPAL §2): the excursions requests are independent and may overlap.
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm


@poppy
def city_excursions(region):
    cities = llm(f"list: cities in {region}", n=5).split("\n")
    for city in cities:
        print(city)
        excursions = llm(f"Excursions in {city}")
        print(excursions)


city_excursions("Oceania")
