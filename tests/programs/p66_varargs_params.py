# @poppy functions with *args/**kwargs parameters (bound from the frame) and calls between them.
# difftest: min_in_flight=3
from poppy_jit import poppy
from _ext import llm, log


@poppy
def ask_all(*prompts, style="plain", **extra):
    outs = [llm(p, style) for p in prompts]
    if extra:
        outs.append(llm(prompts[0] if prompts else "none", **extra))
    log(f"{len(prompts)} {sorted(extra)}")
    return outs


@poppy
def main(topics):
    a = ask_all(*topics)
    b = ask_all(topics[0], style="loud", n=2)
    c = ask_all()
    return a, b, c


print(main(("hail", "sleet", "fog", "mist")))
print(ask_all("dew", "frost", "rime", "haze"))
print(ask_all("dew", "frost", n=1))
