# Module globals, attribute calls on a module, and an unannotated (hence sequential) external.
from poppy_jit import poppy
import _ext

PREFIX = "Q"
LIMITS = {"short": 1, "long": 4}


@poppy
def ask(kind):
    answer = _ext.llm(f"list: {PREFIX} {kind}", n=LIMITS[kind])
    _ext.note(f"{kind} -> {len(answer.split())} lines")
    print(answer)


@poppy
def main():
    ask("short")
    ask("long")
    _ext.log("finished")


main()
