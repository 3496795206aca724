def f(docs):
    out = []
    for d in docs:
        if d.relevant:
            out.append(summarize(d))
    return out
