class OpenAIError(Exception):
    pass
