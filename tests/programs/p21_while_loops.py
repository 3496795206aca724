# while loops: a counter, a retry loop with `while True`, and continue/break inside while.
from poppy_jit import poppy
from _ext import llm, log, read, write


@poppy
def countdown(n):
    while n > 0:
        print("tick", n, llm(f"count: {n}"))
        n -= 1
    return n


@poppy
def retry(prompt, limit):
    attempt = 0
    while True:
        attempt += 1
        answer = llm(f"yesno: {prompt} try {attempt}")
        log(f"attempt {attempt}: {answer}")
        if answer == "yes":
            break
        if attempt >= limit:
            return None
    return attempt


@poppy
def drain(keys):
    i = 0
    done = 0
    while i < len(keys) and done < 3:
        key = keys[i]
        i += 1
        if read(key) is None:
            continue
        write(key, llm(f"rewrite {key}"))
        done += 1
    return done, i


print(countdown(4))
print(retry("ship it", 5), retry("wait", 2))
print(drain(["greeting", "nothing", "limit", "absent", "mode", "greeting"]))
