"""Micro-benchmark of `classify` (called once per external call, operators included).

    python benches/classify_bench.py

Prints the cost per call of typical classifications, and of deep immutability of a large tuple
with and without the id cache.
"""
import operator
import timeit

from poppy_jit import _annotations as A


def main() -> None:
    big = tuple(f"s{i}" for i in range(1000))
    cases = {
        "add(int, int)": (operator.add, (1, 2)),
        "add(str, str)": (operator.add, ("a", "b")),
        "getitem(list, int)": (operator.getitem, ([1, 2, 3], 0)),
        "eq(big tuple, big tuple) [cached]": (operator.eq, (big, big)),
        "str.upper()": ("abc".upper, ()),
        "list.append(x)": ([].append, (1,)),
        "len(list)": (len, ([1, 2],)),
        "unknown function": (main, ()),
    }
    n = 100_000
    for name, (f, args) in cases.items():
        t = timeit.timeit(lambda: A.classify(f, args, ()), number=n)
        print(f"{name:40s} {t / n * 1e9:8.0f} ns")
    t_uncached = timeit.timeit(lambda: A._deep_level(big), number=1000) / 1000
    t_cached = timeit.timeit(lambda: A.level(big), number=n) / n
    print(f"{'deep level of a 1000-tuple, uncached':40s} {t_uncached * 1e9:8.0f} ns")
    print(f"{'deep level of a 1000-tuple, cached':40s} {t_cached * 1e9:8.0f} ns")


if __name__ == "__main__":
    main()
