def f(items):
    out = []
    with section("classify"):
        for it in items:
            out.append(llm(it))
    return out
