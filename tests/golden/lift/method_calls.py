def f(client, text):
    words = text.strip().split(",")
    reply = client.chat.complete(words, model=client.default_model)
    return reply.content
