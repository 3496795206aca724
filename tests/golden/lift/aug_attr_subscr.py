def f(obj, d, k):
    obj.count += 1
    d[k] += obj.count
    del d["old"]
    del obj.cache
    d[k] = d.get(k)
