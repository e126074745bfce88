"""RoPE as complex numbers (torch.view_as_complex reads neighbouring dimensions as one number:
the interleaved layout) for a model whose checkpoint rotates half-split pairs (rotate_half):
the stages of one causal head, by stage id, for `qkvcalc check --stages`."""

import torch


def sdpa(x, wq, wk, wv, theta=10000.0):
    x, wq, wk, wv = (torch.as_tensor(t, dtype=torch.float64) for t in (x, wq, wk, wv))
    q, k, v = x @ wq, x @ wk, x @ wv
    n, d = q.shape
    freqs = theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = torch.outer(torch.arange(n, dtype=torch.float64), freqs)
    turn = torch.polar(torch.ones_like(angles), angles)

    def rope(t):
        pairs = torch.view_as_complex(t.reshape(n, d // 2, 2).contiguous())
        return torch.view_as_real(pairs * turn).reshape(n, d)

    q_rot, k_rot = rope(q), rope(k)
    out = torch.nn.functional.scaled_dot_product_attention(
        q_rot[None], k_rot[None], v[None], is_causal=True
    )[0]
    return {"q_rot": q_rot.numpy(), "k_rot": k_rot.numpy(), "output": out.numpy()}
