"""A deterministic stand-in for the old (0.27) openai package: ChatCompletion.create answers
from the prompt alone after a fixed latency (STANDIN_LATENCY seconds, default 0.05)."""
import hashlib
import itertools
import os
import re
import time

from . import error  # noqa: F401  (openai.error.OpenAIError)

api_key = None
api_base = None
LATENCY = float(os.environ.get("STANDIN_LATENCY", "0.05"))
_LOG = os.environ.get("STANDIN_LOG")


def _h(*parts) -> int:
    return int(hashlib.sha256("\x00".join(map(str, parts)).encode()).hexdigest()[:12], 16)


def _fmt(v):
    return str(int(v)) if float(v).is_integer() else str(round(v, 2))


def _propose(numbers, salt):
    nums = [float(x) for x in numbers]
    steps = []
    for i, j in itertools.combinations(range(len(nums)), 2):
        a, b = nums[i], nums[j]
        rest = [nums[k] for k in range(len(nums)) if k not in (i, j)]
        for op, v in (("+", a + b), ("*", a * b), ("-", abs(a - b)),
                      ("/", (max(a, b) / min(a, b)) if min(a, b) and max(a, b) % min(a, b) == 0 else None)):
            if v is None:
                continue
            x, y = (a, b) if op in "+*" else (max(a, b), min(a, b))
            left = " ".join(_fmt(n) for n in sorted(rest + [v]))
            steps.append(f"{_fmt(x)} {op} {_fmt(y)} = {_fmt(v)} (left: {left})")
    steps.sort(key=lambda s: _h(salt, s))
    return "\n".join(steps[:8])


def _answer(prompt: str, k: int) -> str:
    """A deterministic reply to `prompt` (the k-th sample)."""
    tail = prompt.rstrip().split("\n")
    if "Possible next steps:" in tail[-1]:  # game24 propose
        nums = re.findall(r"[\d.]+", tail[-2].split("Input:")[-1])
        return _propose(nums, prompt)
    if prompt.rstrip().endswith("Judge:"):  # game24 last-step value
        return "sure" if _h(prompt, k) % 3 == 0 else "impossible"
    if prompt.startswith("Evaluate if given numbers can reach 24"):
        nums = [float(x) for x in re.findall(r"[\d.]+", tail[-1])]
        word = ["sure", "likely", "impossible"][_h(prompt, k) % 3]
        if len(nums) == 1:
            word = "sure" if nums[0] == 24 else "impossible"
        return f"{' '.join(_fmt(n) for n in nums)}\nthinking...\n{word}"
    if "Steps:" in prompt and "(left: 24)" in tail[-1]:  # game24 final answer
        return f"Answer: ({_h(prompt) % 7} + 17) = 24"
    # debate (arithmetic): an answer near the true value, agents converging over rounds
    m = re.search(r"result of (\d+)\+(\d+)\*(\d+)\+(\d+)-(\d+)\*(\d+)", prompt)
    if m:
        a, b, c, d, e, f = map(int, m.groups())
        true = a + b * c + d - e * f
        off = (_h(prompt, k) % 5) - 2 if prompt.count("One agent response") < 2 else 0
        return f"Working through {a}+{b}*{c}+{d}-{e}*{f} step by step, the answer is {true + off}"
    return f"Reply {_h(prompt, k) % 10007}"


class ChatCompletion:
    @staticmethod
    def create(model=None, messages=(), n=1, **kwargs):
        t0 = time.time()
        time.sleep(LATENCY)
        prompt = "\n\n".join(m["content"] for m in messages)
        choices = [{"index": k, "message": {"role": "assistant", "content": _answer(prompt, k)},
                    "finish_reason": "stop"} for k in range(n)]
        out = {"object": "chat.completion", "model": model, "choices": choices,
               "usage": {"prompt_tokens": len(prompt.split()),
                         "completion_tokens": sum(len(c["message"]["content"].split()) for c in choices)}}
        if _LOG:
            with open(_LOG, "a") as f:
                f.write(f"{t0:.4f} {time.time():.4f} {_h(prompt)}\n")
        return out
