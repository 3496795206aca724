# File-like iterators are read one line per iteration: a break leaves the rest unread (the
# file's position shows it), and a line-processing body interleaves with reads.
import io
import os
import tempfile

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


class NoisyReader(io.StringIO):
    def __next__(self):
        line = super().__next__()
        print("read", line.strip())
        return line


@poppy
def header(f):
    lines = []
    for line in f:
        if line.strip() == "---":
            break
        lines.append(llm(f"yesno: {line.strip()}"))
        log(f"header line {line.strip()}")
    return lines


@poppy
def count_words(path):
    total = 0
    with_open = open(path)
    for line in with_open:
        total += len(line.split())
        print("line", line.strip())
    with_open.close()
    return total


r = NoisyReader("a: 1\nb: 2\n---\nbody\nmore\n")
print(header(r))
print("rest:", repr(r.read()))
fd, path = tempfile.mkstemp(suffix=".txt")
with os.fdopen(fd, "w") as w:
    w.write("one two\nthree\nfour five six\n")
print(count_words(path))
os.unlink(path)
