async def f(m, llm):
    with m as held:
        try:
            x = await llm(held)
        except KeyError:
            raise RuntimeError("missing") from None
    return x
