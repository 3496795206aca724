"""CaMeL-style assistant program (no LLM call): how many e-mails did a contact send, and about
what?"""
from poppy_jit import poppy
from poppy_jit.bench.ext import search_emails

PARAMS = {"sender": "alice@example.com"}


@poppy
def main(sender):
    subjects = tuple()
    for email in search_emails(sender):
        if email[1] == sender:
            subjects += (email[2],)
    print(f"{sender} sent {len(subjects)} e-mail(s): {subjects}")
    return len(subjects)


def run(sender):
    return main(sender)


async def run_manual(sender):
    subjects = tuple(e[2] for e in search_emails(sender) if e[1] == sender)
    print(f"{sender} sent {len(subjects)} e-mail(s): {subjects}")
    return len(subjects)
