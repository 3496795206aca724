def f(xs, k):
    def ask(p, style="plain", *, n=k):
        return llm(p, style, n)
    return [ask(x) for x in xs], ask("z", n=2)
