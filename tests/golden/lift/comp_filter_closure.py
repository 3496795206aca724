def f(prompts, style):
    outs = [llm(p, style) for p in prompts if p]
    return outs
