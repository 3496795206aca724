def f(items):
    for item in items:
        if item.ok:
            found = item
            break
    else:
        found = None
    log(found)
    return found
