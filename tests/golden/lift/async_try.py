async def f(x):
    try:
        return await llm(x)
    except ValueError:
        return None
