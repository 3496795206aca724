def f(xs):
    import os.path
    import os.path as osp
    from collections import OrderedDict as OD, deque
    from . import sibling
    return OD(deque(xs)), os.path, osp, sibling
