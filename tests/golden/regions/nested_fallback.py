# An outer loop over a list (a region that declines at run time: a list is not closed) holds in
# its fallback a region per document: the word counts of one string.
def f(docs):
    sizes = []
    for d in docs:
        counts = {}
        for w in d.split():
            counts[w] = counts.get(w, 0) + 1
        sizes.append(len(counts))
    s = ""
    for x in sizes:
        s += str(x) + ","
    return s
