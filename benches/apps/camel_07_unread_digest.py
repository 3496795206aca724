"""CaMeL-style assistant program: summarise every unread e-mail with an LLM and send the digest
to the user."""
import asyncio

from poppy_jit import poppy
from poppy_jit.bench.ext import allm, llm, send_email, unread_emails

PARAMS = {"me": "me@example.com"}


@poppy
def main(me):
    digest = ""
    for email in unread_emails():
        summary = llm(f"camel: summarise in one line: {email[2]}: {email[3]}")
        digest = digest + f"- {email[1]}: {summary}\n"
    send_email(me, "Unread digest", digest)
    print(digest)
    return len(digest)


def run(me):
    return main(me)


async def run_manual(me):
    emails = unread_emails()
    summaries = await asyncio.gather(
        *(allm(f"camel: summarise in one line: {e[2]}: {e[3]}") for e in emails))
    digest = "".join(f"- {e[1]}: {s}\n" for e, s in zip(emails, summaries))
    send_email(me, "Unread digest", digest)
    print(digest)
    return len(digest)
