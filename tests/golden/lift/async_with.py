async def f(lock, llm):
    async with lock as held:
        x = await llm(held)
    return x
