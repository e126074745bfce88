"""Right: PyTorch's own scaled_dot_product_attention (query, key, value; attn_mask, is_causal)."""

import torch.nn.functional as F


def attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    return F.scaled_dot_product_attention(
        query, key, value, attn_mask=attn_mask, is_causal=is_causal, scale=scale
    )
