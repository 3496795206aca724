def f(items):
    out = []
    for it in items:
        with section(it) as s:
            if it:
                out.append(llm(s))
    return out
