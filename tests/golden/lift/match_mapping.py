def f(x):
    match x:
        case {"k": v, **kw}:
            return llm(v, kw)
    return None
