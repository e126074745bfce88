"""Right: multi-head attention written with torch, einsum and repeat_interleave (grouped-query)."""

import math

import torch


def mha(x, wq, wk, wv, wo=None, num_heads=1, kv_heads=None, mask=None):
    groups = kv_heads or num_heads
    n = x.shape[0]
    q = (x @ wq).view(n, num_heads, -1).transpose(0, 1)  # [H, n, d_k]
    k = (x @ wk).view(n, groups, -1).transpose(0, 1)
    v = (x @ wv).view(n, groups, -1).transpose(0, 1)
    k = k.repeat_interleave(num_heads // groups, dim=0)
    v = v.repeat_interleave(num_heads // groups, dim=0)
    s = torch.einsum("hid,hjd->hij", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = torch.softmax(s, dim=-1).nan_to_num(0.0)  # a fully masked row: weights 0
    out = (w @ v).transpose(0, 1).reshape(n, -1)
    return out if wo is None else out @ wo
