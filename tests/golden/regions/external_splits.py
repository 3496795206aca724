# A call in the loop's body is fine statically (the region checks at run time that what it calls
# is one of the builtins it accepts); a `return` ends a stretch, and a loop whose body returns
# is not a region (`found` is read after it).
def f(xs, key):
    doc = fetch(key)
    counts = {}
    for w in doc.split():
        counts[w] = counts.get(w, 0) + 1
    log(counts)
    for x in xs:
        if x == key:
            return x
    return len(counts)
