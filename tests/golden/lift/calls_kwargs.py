def f(region, n):
    prompt = "List " + str(n) + " cities in " + region
    answer = llm(prompt, temperature=0.5, max_tokens=n)
    log(answer)
    return answer
