def f(a, b):
    x = a + b
    x = a & b
    x = a // b
    x = a << b
    x = a @ b
    x = a * b
    x = a % b
    x = a | b
    x = a ** b
    x = a >> b
    x = a - b
    x = a / b
    x = a ^ b
    return x
