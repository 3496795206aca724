# Keyword arguments to externals and builtins.
from poppy_jit import poppy
from _ext import llm, log


@poppy
def styles(prompt):
    a = llm(prompt)
    b = llm(prompt, style="loud")
    c = llm(prompt=f"list: {prompt}", n=4, style="terse")
    print(a)
    print(b)
    print(c)
    print(sorted(c.split("\n"), reverse=True))
    log(msg=f"done {prompt}")


styles("kwargs")
styles("more kwargs")
