def f(m, n):
    while m % 2 == n % 2 == 0:
        m //= 2
        n //= 2
    return m, n
