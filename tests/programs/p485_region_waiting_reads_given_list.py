# A region call still waiting for one live-in (a slow chained answer) already holds the owned
# list it will read (`reads [xs]`). The append to that list after the region must not run before
# the region's read, or the region would read the appended item too. Two things order it: the
# rewrite's `if` on the region's result (calls after it wait for the region to finish), and
# per-object ordering's walk, which sees only a waiting call's known arguments (without their
# positions) and so counts every container among them as read (`Region.reached`). The topics are
# those whose first answer comes well before the chained one.
from poppy_jit import poppy
from _ext import llm, set_latency_scale

set_latency_scale(0.5)


@poppy
def joined(topic):
    xs = []
    xs.append(llm(f"about {topic}"))
    text = llm(f"prefix after {llm(f'first half on {topic}')}")
    llm(f"noise on {topic}")
    head = text[:3]
    for x in xs:
        text += x[:4]
    xs.append("late")
    return head, text[-12:], len(xs)


for t in ("snow", "fog", "mist", "reef"):
    print(joined(t))
