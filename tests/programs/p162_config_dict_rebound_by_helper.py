# An unannotated helper (sequential) that rebinds a config dict global: the @poppy function's
# later reads see the new dict, the earlier ones the old.
from poppy_jit import poppy
from _ext import llm, log

CONFIG = {"style": "plain", "n": 1}


def reconfigure(**changes):
    global CONFIG
    CONFIG = {**CONFIG, **changes}


@poppy
def run():
    first = llm("topic", style=CONFIG["style"])
    reconfigure(style="loud")
    second = llm("topic", style=CONFIG["style"])
    reconfigure(n=2)
    log(f"config {sorted(CONFIG.items())}")
    return first, second, CONFIG["n"]


print(run())
