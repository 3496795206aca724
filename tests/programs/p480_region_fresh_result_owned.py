# A region (the loop parsing a reply into a list, as in skeleton-of-thought) returns a list it
# built itself: the run owns it exactly as if the compiled code had built it, so reading it
# (`points[i]`, `len(points)`) after the expansions does not wait behind the previous question's
# print: every question's expansions overlap.
# difftest: min_in_flight=8
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.5)


@poppy
def parse_points(skeleton):
    points = []
    for line in skeleton.split("\n"):
        line = line.strip()
        if line != "":
            points.append(line.split("-", 1)[0])
    return points


@poppy
def answer(question):
    points = parse_points(llm(f"list: points of {question}", n=4))
    expansions = []
    for point in points:
        expansions.append(llm(f"expand {question} {point}"))
    text = f"Q: {question}\n"
    for i in range(len(points)):
        text = text + f"{i + 1}. {points[i]}: {expansions[i]}\n"
    return text


@poppy
def main(questions):
    out = []
    for q in questions:
        text = answer(q)
        log(text)
        out.append(len(text))
    return out


print(main(("vaccines", "rome", "review")))
