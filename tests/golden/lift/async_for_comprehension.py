async def f(pages, llm):
    return [await llm(p) async for p in pages]
