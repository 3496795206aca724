"""CaMeL-style assistant program (no LLM call): move a meeting to the next day, same time, by
creating the new event."""
from poppy_jit import poppy
from poppy_jit.bench.ext import create_event, search_events

PARAMS = {"title": "Design review", "new_day": "2024-06-14"}


@poppy
def main(title, new_day):
    moved = 0
    for event in search_events(title):
        create_event(new_day, event[2], event[3], event[4], event[5])
        moved = moved + 1
    print(f"moved {moved} event(s) to {new_day}")
    return moved


def run(title, new_day):
    return main(title, new_day)


async def run_manual(title, new_day):
    moved = 0
    for event in search_events(title):
        create_event(new_day, event[2], event[3], event[4], event[5])
        moved += 1
    print(f"moved {moved} event(s) to {new_day}")
    return moved
