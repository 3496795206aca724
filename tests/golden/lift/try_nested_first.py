def f(items):
    out = []
    for it in items:
        try:
            try:
                v = json.loads(g(it))["label"]
            except (json.JSONDecodeError, KeyError) as e:
                v = h(e)
            out.append(v)
        except ValueError:
            out.append(None)
    return out
