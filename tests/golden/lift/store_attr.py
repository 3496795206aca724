def f(obj, x):
    obj.value = x
