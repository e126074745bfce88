"""The stage ids that the other layers ask for by name (DESIGN's stage ids, written by the plan
and the feature modules): a writer, the quiz or the trace names a stage through these, never
by a literal of its own, so that an id is spelled in the plan alone (tests/test_layers.py)."""

from __future__ import annotations

Q, K, V = "q", "k", "v"  # a head's projections (or the matrices given)
KT = "kt"
SCORES = "scores"
SCALED = "scaled"
MASKED = "masked"
EXP = "exp"
WEIGHTS = "weights"
OUTPUT = "output"  # a head's output, and the final one (no head)
CONCAT = "concat"
K_CACHE, V_CACHE = "k_cache", "v_cache"  # decoding with a KV cache
RUNNING_MAX, RUNNING_SUM = "running_max", "running_sum"  # attention in tiles
# the backward pass (--backward, qkvcalc.plan.backward): ∂L/∂ of the stage it is named after
GRAD_OUTPUT, GRAD_V, GRAD_WEIGHTS = "grad_output", "grad_v", "grad_weights"
GRAD_SCORES, GRAD_Q, GRAD_K = "grad_scores", "grad_q", "grad_k"
GRAD_WQ, GRAD_WK, GRAD_WV, GRAD_WO = "grad_wq", "grad_wk", "grad_wv", "grad_wo"
GRAD_X, GRAD_SOURCE = "grad_x", "grad_source"
BACK_OP = "back"  # the op of a gradient stage that goes back through a feature's forward stage
BLOCK_GRAD_P = "block_grad_p"  # in tiles (--tiles B --backward): a block's columns of dA

# The stages the quiz asks when it is not told which (--stages): a head's main steps; and, of
# a decode run or a tiled one, those of these it has (caches instead of K and V, a running
# max and sum instead of whole rows of weights).
QUIZ_DEFAULT = (Q, K, V, SCORES, SCALED, WEIGHTS, OUTPUT)
QUIZ_MORE = (K_CACHE, V_CACHE, RUNNING_MAX, RUNNING_SUM)

# … and with --backward, the backward's main steps instead (the softmax's backward, whichever
# stage came last before the softmax, is the quiz's to find: its op is softmax_back)
QUIZ_BACKWARD = (GRAD_V, GRAD_WEIGHTS, GRAD_SCORES, GRAD_Q, GRAD_K, GRAD_WQ)

# The backward pass's gradients of the learned matrices (plan/backward.py), by the input key of
# the matrix: what `qkvcalc train` (qkvcalc/run/train.py) steps each weight against.
GRAD_OF = {name: f"grad_{name}" for name in ("wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo")}

# The softmax's backward stage has the id of whichever logits the softmax read (grad_masked,
# grad_capped …); its topic names it whatever that id is. A stage that goes back through one
# forward op has the topic "grad_back." + that op's name (the scaling's: GRAD_BACK_SCALE).
TOPIC_GRAD_LOGITS = "grad_logits"
TOPIC_GRAD_BACK_SCALE = "grad_back.scale"
TOPIC_GRAD_Q_SIDE = "grad_q_side"  # dQ (or the rotated or normed q's): d(Q·Kᵀ)·K
TOPIC_GRAD_K_SIDE = "grad_k_side"  # dK: d(Q·Kᵀ)ᵀ·Q
