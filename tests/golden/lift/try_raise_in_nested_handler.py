def f(xs):
    for x in xs:
        try:
            try:
                try:
                    v = u_parse(x)
                except KeyError:
                    if x == "bad raise":
                        raise
                    v = "fixed"
                print("after", v)
            finally:
                print("finally", x)
        except "KeyError" as e:
            print("caught", e)
    print("done")
