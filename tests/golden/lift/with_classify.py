import json


def f(items):
    labels = []
    with section("classify"):
        for it in items:
            try:
                label = json.loads(llm(f"classify {it}"))["label"]
            except (json.JSONDecodeError, KeyError):
                label = json.loads(llm(f"classify strictly {it}"))["label"]
            else:
                log(f"ok {it}")
            finally:
                log(f"done {it}")
            labels.append(label)
    return labels
