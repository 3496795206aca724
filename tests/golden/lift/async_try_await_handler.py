async def f(x, log):
    try:
        a = await llm(x)
    except ValueError as e:
        a = await llm(e)
        if not a:
            raise
    else:
        a = a + 1
    finally:
        await log(x)
    return a
