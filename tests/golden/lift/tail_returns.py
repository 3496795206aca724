def f(x):
    if x:
        return llm(x)
    else:
        return None
