async def f(sessions, llm):
    got = []
    for s in sessions:
        async with s as held:
            if held is None:
                break
            if held == 0:
                return got
            got.append(await llm(held))
    return got
