def f(xs):
    for x in xs:
        yield llm(x)
