"""CaMeL-style assistant program (no LLM call): list the drive's files whose name mentions a
keyword."""
from poppy_jit import poppy
from poppy_jit.bench.ext import list_files

PARAMS = {"keyword": "vacation"}


@poppy
def main(keyword):
    found = []
    for name in list_files():
        if keyword in name:
            found.append(name)
    print(f"{len(found)} file(s): {', '.join(found)}")
    return found


def run(keyword):
    return main(keyword)


async def run_manual(keyword):
    found = [n for n in list_files() if keyword in n]
    print(f"{len(found)} file(s): {', '.join(found)}")
    return found
