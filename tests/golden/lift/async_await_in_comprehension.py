async def f(xs):
    return [await llm(x) for x in xs]
