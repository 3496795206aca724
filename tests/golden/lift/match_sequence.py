def f(x):
    match x:
        case [a, b]:
            return llm(a, b)
        case [first, *rest]:
            return rest
        case _:
            return None
