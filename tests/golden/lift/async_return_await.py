async def f(x):
    return await llm(x)
