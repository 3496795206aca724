# A comprehension inside `return`: the list's register is used after the stretch, so it leaves
# through a temporary that both branches store.
def f(n):
    return sum([x * 2 for x in range(n) if x % 3])
