"""Model types whose attention the input format cannot say, refused by name with the reason,
before anything loads (rather than as an unknown architecture): each one's modeling code in
transformers 5.23–5.25 was read, and the step no key of a problem expresses is named.

- BitNet (`bitnet`): an RMSNorm over all heads' outputs joined (attn_sub_norm, H·d_v numbers
  per token) before o_proj — softmax attention has no such step (only the lightning layer's
  norm joins the heads); its checkpoints' BitLinear also rounds each projection's input to
  8 bits per token.
- JetMoE (`jetmoe`): a mixture of attention heads — each token's W_Q and its share of W_O are
  those of the experts its router picks for that token.
- Laguna (`laguna`): its output gate is softplus(x·W_G), the input format's wg is σ(x·W_G + b_G).
- Inkling (`inkling_text`, `inkling_mm_model`) and Inkling 2 (`inkling2_text`, `inkling2`): K
  and V pass through a short causal convolution over the tokens after k_proj and v_proj, so K
  is not x·W_K; Inkling 2's sinks are more, one per token and head (sink_proj).
"""

from __future__ import annotations

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg

# model_type → (the architecture's name, the catalog key of why its attention is not a problem)
REFUSED = {
    "bitnet": ("BitNet", "refused.bitnet"),
    "jetmoe": ("JetMoE", "refused.jetmoe"),
    "laguna": ("Laguna", "refused.laguna"),
    "inkling_text": ("Inkling", "refused.inkling"),
    "inkling_mm_model": ("Inkling", "refused.inkling"),
    "inkling2_text": ("Inkling 2", "refused.inkling2"),
    "inkling2": ("Inkling 2", "refused.inkling2"),
}


def check_type(model_type: str, model: str) -> None:
    """A model type whose attention no problem can say, refused naming it and the reason."""
    if model_type in REFUSED:
        name, reason = REFUSED[model_type]
        raise QkvcalcError(
            "extract.not_expressible",
            model=model,
            arch=name,
            model_type=model_type,
            reason=Msg(reason),
        )
