"""CaMeL-style assistant program (no LLM call): a day's agenda and its total meeting time."""
from poppy_jit import poppy
from poppy_jit.bench.ext import day_events

PARAMS = {"day": "2024-06-13"}


@poppy
def main(day):
    total = 0
    for event in day_events(day):
        print(f"{event[2]} {event[4]} ({event[3]} min)")
        total = total + event[3]
    print(f"total: {total // 60} h {total % 60} min")
    return total


def run(day):
    return main(day)


async def run_manual(day):
    total = 0
    for event in day_events(day):
        print(f"{event[2]} {event[4]} ({event[3]} min)")
        total += event[3]
    print(f"total: {total // 60} h {total % 60} min")
    return total
