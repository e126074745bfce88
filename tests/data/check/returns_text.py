"""Returns a sentence instead of numbers."""


def attention(q, k, v):
    return "the output"
