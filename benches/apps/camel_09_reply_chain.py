"""CaMeL-style assistant program: two dependent LLM calls (extract an address, then write the
reply) and a send. A chain: nothing to parallelise."""
from poppy_jit import poppy
from poppy_jit.bench.ext import allm, llm, search_emails, send_email

PARAMS = {"topic": "lunch"}


@poppy
def main(topic):
    thread = search_emails(topic)
    address = llm(f"camel: extract email of the sender of: {thread[0][3]}")
    reply = llm(f"camel: write a friendly reply to {address} about: {thread[-1][3]}")
    send_email(address, f"Re: {thread[0][2]}", reply)
    print(f"replied to {address}")
    return reply


def run(topic):
    return main(topic)


async def run_manual(topic):
    thread = search_emails(topic)
    address = await allm(f"camel: extract email of the sender of: {thread[0][3]}")
    reply = await allm(f"camel: write a friendly reply to {address} about: {thread[-1][3]}")
    send_email(address, f"Re: {thread[0][2]}", reply)
    print(f"replied to {address}")
    return reply
