# Keyword-only parameters, nested loops with break/else, and early returns.
from poppy_jit import poppy
from _ext import llm, log


@poppy
def grid(rows, *, limit=10, style="plain"):
    total = 0
    for row in rows:
        for cell in row:
            if cell is None:
                break
            total += cell
            if total > limit:
                return total, "over"
        else:
            print(row, llm(f"describe {row}", style=style))
            continue
        log(f"row {row} stopped early")
    return total, "under"


print(grid([[1, 2], [3, None, 9], [4]], style="loud"))
print(grid([[5, 5], [5]], limit=12))
