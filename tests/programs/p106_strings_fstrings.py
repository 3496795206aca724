# f-strings with conversions (!r !s !a) and format specs (widths, alignment, precision, nested
# specs, thousands separators), and string processing of LLM results: split, strip, parse numbers,
# find answer lines, build reports.
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm, log, lookup, set_latency_scale

set_latency_scale(0.1)


@poppy
def conversions(topic):
    reply = llm(f"about {topic}")
    return f"{reply!r} | {reply!s} | {topic!a} | {'é'!a}"


@poppy
def format_specs(values):
    out = []
    for v in values:
        n = int(llm(f"count: {v}"))
        out.append(f"{v:>6}|{n:04d}|{n / 7:.3f}|{n * 1000:,}|{n:x}|{n:#b}|{v:^9}|{n:+}")
    return "\n".join(out)


@poppy
def nested_spec(values, width, prec):
    out = []
    for v in values:
        out.append(f"[{v:{width}.{prec}f}]")
    return "".join(out), f"{llm('count: w'):>{width}}"


@poppy
def parse_numbers(topic):
    reply = llm(f"count: items about {topic}")
    n = int(reply.strip())
    half = n // 2
    return f"{n} items, half {half}, ratio {n / (half + 1):.2f}"


@poppy
def answer_line(question):
    text = llm(f"list: reasoning for {question}", n=4)
    answer = "?"
    for line in text.split("\n"):
        if line.endswith("-3"):
            answer = line.rstrip("-3").upper()
    return answer, len(text)


@poppy
def csv_report(rows):
    header = "name,value,tag"
    lines = [header]
    for name in rows:
        val = lookup(name)
        tag = llm(f"yesno: is {name} good")
        lines.append(",".join([name, val.strip("<>"), tag]))
    return "\n".join(lines)


@poppy
def slicing(topic):
    r = llm(f"about {topic}")
    words = r.split(" ")
    return r[:5], r[-5:], r[::3][:6], words[1:3], " ".join(reversed(words))


@poppy
def join_replies(topics, sep=" / "):
    parts = []
    for t in topics:
        parts.append(llm(f"summary of {t}").split(" about ")[0])
    joined = sep.join(parts)
    log(f"joined {len(parts)} parts, {len(joined)} chars")
    return joined.title()


@poppy
def percent_and_format(values):
    out = ""
    for v in values:
        out += "%s=%05.1f;" % (v, int(llm(f"count: pct {v}")) * 1.5)
    return out + "{}/{}".format(len(values), "done")


@poppy
def multiline_prompt(name, items):
    prompt = f"""Dear {name},
here are {len(items)} items:
{", ".join(items)}
Regards"""
    reply = llm(prompt)
    return reply.count("\n"), reply.split()[0]


@poppy
def strip_and_case(raw):
    cleaned = []
    for r in raw:
        reply = llm(f"  {r}  ", style="loud")
        cleaned.append(reply.strip().lower().replace(" ", "_"))
    return cleaned, "_".join(cleaned).isidentifier()


print(conversions("café"))
print(format_specs(["a", "bb"]))
print(nested_spec([3.14159, 2.71828], 8, 2))
print(parse_numbers("maps"))
print(answer_line("why"))
print(csv_report(["n1", "n2"]))
print(slicing("the sea"))
print(join_replies(["a", "b", "c"]))
print(join_replies(["d"], sep="+"))
print(percent_and_format(["x", "y"]))
print(multiline_prompt("Ana", ["pen", "ink"]))
print(strip_and_case(["Hi there", "X"]))
