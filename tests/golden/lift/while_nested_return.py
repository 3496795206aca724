def f(self, lines):
    while lines:
        line = lines.pop().strip()
        if line and line[0] != "#":
            if self.run(line):
                return True
