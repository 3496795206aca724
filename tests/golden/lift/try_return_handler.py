def f(x):
    y = prepare(x)
    try:
        return llm(y)
    except TimeoutError:
        return None
