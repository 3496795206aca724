def f(xs):
    for x in WORK:
        helper(x)
    for k, v in REG.items():
        helper(k)
    jobs = self.queue
    for i, j in enumerate(jobs):
        helper(j)
    for x in CFG["jobs"]:
        helper(x)
    for x in xs:
        helper(x)
    return [y for y in xs if y in WORK]
