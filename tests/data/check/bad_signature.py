"""A function whose parameters check cannot fill, and one that is not a function."""

attention_table = {"q": 1}


def attention(a, b, c):
    return a


def attention_extra(q, k, v, temperature):
    return q
