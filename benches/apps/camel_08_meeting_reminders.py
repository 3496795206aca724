"""CaMeL-style assistant program: draft a reminder for every meeting of a day with an LLM and
e-mail each participant (the sends stay in program order)."""
import asyncio

from poppy_jit import poppy
from poppy_jit.bench.ext import allm, day_events, llm, send_email

PARAMS = {"day": "2024-06-13"}


@poppy
def main(day):
    sent = 0
    for event in day_events(day):
        body = llm(f"camel: draft a short reminder for {event[4]} at {event[2]} on {day}")
        for person in event[5]:
            send_email(person, f"Reminder: {event[4]}", body)
            sent = sent + 1
    print(f"sent {sent} reminder(s)")
    return sent


def run(day):
    return main(day)


async def run_manual(day):
    events = day_events(day)
    bodies = await asyncio.gather(
        *(allm(f"camel: draft a short reminder for {e[4]} at {e[2]} on {day}") for e in events))
    sent = 0
    for event, body in zip(events, bodies):
        for person in event[5]:
            send_email(person, f"Reminder: {event[4]}", body)
            sent += 1
    print(f"sent {sent} reminder(s)")
    return sent
