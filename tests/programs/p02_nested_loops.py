# Nested loops, with a sequential log per outer iteration.
from poppy_jit import poppy
from _ext import llm, log


@poppy
def tour(regions):
    for region in regions:
        log(f"region {region}")
        for city in llm(f"list: cities in {region}", n=3).split("\n"):
            for topic in ["food", "parks"]:
                print(region, city, topic, llm(f"{topic} in {city}"))


tour(["north", "south"])
