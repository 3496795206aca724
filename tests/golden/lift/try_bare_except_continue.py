def f(questions):
    out = []
    for q in questions:
        answers = [parse(a) for a in ask(q)]
        try:
            pred = most_frequent(answers)
        except:
            continue
        out.append(pred)
    return out
