def f(region):
    cities = llm("List cities in " + region).split("\n")
    plans = []
    for city in cities:
        if city:
            plans.append(llm(f"Plan an excursion in {city}", temperature=0.2))
    return "\n".join(plans)
