# Arithmetic, comparisons, tuples, subscripts and a returned tuple.
from poppy_jit import poppy
from _ext import llm


@poppy
def score(words):
    total = 0
    best = ""
    for w in words:
        n = int(llm(f"count: {w}"))
        total = total + n
        if n > 10:
            best = w
        print(w, n, n % 3 == 0, n * 2 - 1)
    return (total, best, len(words))


@poppy
def main():
    result = score(["ant", "bee", "cow", "dog", "eel", "fox", "gnu"])
    print("total", result[0], "best", result[1], "of", result[2])


main()
