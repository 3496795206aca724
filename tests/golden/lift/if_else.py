def f(x):
    if x > 0:
        label = "positive"
    else:
        label = classify(x)
    report(label)
    return label
