def f(prompt, *, model="small", retries=2):
    return ask(prompt, model=model, retries=retries)
