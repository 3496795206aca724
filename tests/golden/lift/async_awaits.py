async def f(items, client):
    out = []
    for it in items:
        a = await llm(f"summarize {it}")
        b = await client.complete(a, n=2)
        out.append(f"{a}: {await shorten(b)}")
    c = make_coro()
    await sleep(0)
    return await c
