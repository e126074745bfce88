"""Attention with one mistake put in: wo_missing (multi-head, torch)."""

import math

import torch


def multi_head(
    x,
    w_q,
    w_k,
    w_v,
    w_o=None,
    b_q=None,
    b_k=None,
    b_v=None,
    b_o=None,
    num_heads=1,
    num_kv_heads=None,
    is_causal=False,
):
    groups = num_kv_heads or num_heads
    n = x.shape[0]
    q = torch.nn.functional.linear(x, w_q.T, b_q)
    k = torch.nn.functional.linear(x, w_k.T, b_k)
    v = torch.nn.functional.linear(x, w_v.T, b_v)
    q = q.reshape(n, num_heads, -1).permute(1, 0, 2)
    k = k.reshape(n, groups, -1).permute(1, 0, 2)
    v = v.reshape(n, groups, -1).permute(1, 0, 2)
    k = k.repeat_interleave(num_heads // groups, dim=0)
    v = v.repeat_interleave(num_heads // groups, dim=0)
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if is_causal:
        s = s.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
    out = torch.softmax(s, dim=-1) @ v
    out = out.permute(1, 0, 2).reshape(n, -1)
    return out
