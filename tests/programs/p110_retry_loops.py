# Retry loops: retry until a reply parses, with a budget, with backoff bookkeeping (no sleeping),
# with a validator helper, with a fallback model, and retries that catch an external's exception
# (try/except: runs as plain CPython until the compiler supports it).
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm, log, lookup, set_latency_scale

set_latency_scale(0.1)


def valid(reply):
    return reply.strip().isdigit() and int(reply) % 3 != 0


@poppy
def retry_until_valid(question, budget):
    attempt = 0
    reply = llm(f"count: {question} #{attempt}")
    while not valid(reply) and attempt < budget:
        attempt += 1
        log(f"retry {attempt} for {question}")
        reply = llm(f"count: {question} #{attempt}")
    return reply, attempt


@poppy
def retry_for_break(question, budget=4):
    result = None
    for attempt in range(budget):
        reply = llm(f"yesno: {question} attempt {attempt}")
        if reply == "yes":
            result = attempt
            break
        log(f"{question}: no on attempt {attempt}")
    return result


@poppy
def backoff_schedule(key, attempts):
    delays = []
    delay = 1
    status = lookup(key)
    n = 0
    while n < attempts and not status.endswith("7>"):
        delays.append(delay)
        delay = min(delay * 2, 8)
        n += 1
        status = lookup(f"{key}/{n}")
    return delays, status


@poppy
def fallback_model(prompt):
    primary = llm(f"yesno: primary {prompt}")
    if primary == "yes":
        return "primary", llm(prompt)
    secondary = llm(prompt, style="loud")
    return "secondary", secondary


@poppy
def retry_catching(prompts):
    out = []
    for p in prompts:
        try:
            out.append(llm(p))
        except ValueError as e:
            log(f"caught: {e}")
            out.append(llm(p.replace("fail:", "retry:")))
    return out


@poppy
def retry_all_in_parallel(questions, budget):
    answers = {}
    for q in questions:
        answers[q] = retry_until_valid(q, budget)
    return answers


@poppy
def first_success(prompts):
    for i, p in enumerate(prompts):
        try:
            return i, llm(p)
        except ValueError:
            log(f"prompt {i} failed")
    return None


@poppy
def validated_batch(items, budget=2):
    good, bad = [], []
    for it in items:
        reply, tries = retry_until_valid(it, budget)
        if valid(reply):
            good.append((it, reply, tries))
        else:
            bad.append(it)
    return good, bad


@poppy
def with_context(names):
    import contextlib
    out = []
    with contextlib.suppress(ValueError):
        for n in names:
            out.append(llm(n))
    return out


@poppy
def attempt_counter(q, max_tries=3):
    tries = 0
    answers = []
    while True:
        tries += 1
        answers.append(llm(f"yesno: {q} {tries}"))
        if answers[-1] == "yes" or tries == max_tries:
            return tries, answers


print(retry_until_valid("q1", 3))
print(retry_for_break("deploy"))
print(backoff_schedule("svc", 5))
print(fallback_model("hello"))
print(fallback_model("bye"))
print(retry_catching(["x", "fail: y", "z"]))
print(retry_all_in_parallel(["a", "b", "c"], 2))
print(first_success(["fail: a", "fail: b", "c"]))
print(validated_batch(["u", "v", "w"]))
print(with_context(["m", "fail: n", "o"]))
print(attempt_counter("ok"))
