def f(m):
    with m as (a, b):
        log(a, b)
