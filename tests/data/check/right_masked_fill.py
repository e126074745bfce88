"""Right: torch with masked_fill, the scale as a parameter, and a fully masked row set to 0."""

import torch


def attention(q, k, v, mask=None, scale=None):
    scale = q.size(-1) ** -0.5 if scale is None else scale
    scores = torch.matmul(q, k.transpose(0, 1)) * scale
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    weights = torch.where(torch.isnan(weights), torch.zeros_like(weights), weights)
    return torch.matmul(weights, v)
