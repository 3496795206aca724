def f(xs):
    def ask(p, style, *, n):
        return llm(p, style, n)
    return [ask(x, n=2, style="loud") for x in xs]
