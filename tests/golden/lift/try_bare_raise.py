def f(prompts):
    out = []
    for p in prompts:
        try:
            out.append(int(llm(p)))
        except ValueError:
            try:
                log(p)
            except OSError:
                raise
            if p:
                raise
    return out
