def f(regions, topics):
    results = []
    for region in regions:
        for topic in topics:
            results.append(llm(f"{topic} in {region}"))
        log(region)
    return results
