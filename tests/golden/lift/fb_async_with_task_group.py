async def f(llm):
    async with asyncio.TaskGroup() as tg:
        t = tg.create_task(llm("x"))
    return t.result()
