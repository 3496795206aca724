"""CaMeL-style assistant program (no LLM call): write a file listing the titles of two days'
events."""
from poppy_jit import poppy
from poppy_jit.bench.ext import create_file, day_events

PARAMS = {"days": ("2024-06-13", "2024-06-14")}


@poppy
def main(days):
    lines = ""
    for day in days:
        for event in day_events(day):
            lines = lines + f"{day} {event[2]}: {event[4]}\n"
    return create_file("agenda.txt", lines)


def run(days):
    return main(days)


async def run_manual(days):
    lines = ""
    for day in days:
        for event in day_events(day):
            lines += f"{day} {event[2]}: {event[4]}\n"
    return create_file("agenda.txt", lines)
