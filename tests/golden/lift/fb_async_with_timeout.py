async def f(llm):
    async with asyncio.timeout(5):
        text = await llm("x")
    return text
