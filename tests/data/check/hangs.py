"""Never returns."""


def attention(q, k, v):
    while True:
        pass
