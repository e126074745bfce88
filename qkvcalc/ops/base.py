"""What a feature module declares: one optional mechanism of attention, everything about it in
one place (micrograd keeps an op's forward and backward side by side; a feature keeps its
input key, its stage, its operations, its cell arithmetic, its sentences' keys, its worksheet
policy, its PyTorch lines and its JSON echo side by side).

Each layer reads the features through the registry (qkvcalc.ops.features) and never names
one: the input layer calls `read`, the plan calls `logits`, the op table merges `ops`, the
writers call `work`, `header` and `echo`, the torch script `torch_logits`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from qkvcalc.ops.hooks import JoinWords, Learns, Logits, Mistakes, Reading, Sizes, Turn
from qkvcalc.ops.op import Candidate, Op
from qkvcalc.records import NamedTuple

__all__ = [
    "Candidate",
    "Feature",
    "JoinWords",
    "Learns",
    "Logits",
    "Mistakes",
    "Reading",
    "Sizes",
    "Turn",
    "Work",
]

if TYPE_CHECKING:
    import numpy as np

    from qkvcalc.i18n import Msg
    from qkvcalc.input.problem import Problem
    from qkvcalc.plan.specs import Ref, Spec


# the cell arithmetic of one op: (stage, i, j, style, exact, result) -> the line, or None; the
# style is the writer's (qkvcalc.render.arith.Style): how numbers and symbols are written
Work = Callable[..., "str | None"]


class Feature(NamedTuple):
    name: str  # its key in the input format (the fields table, qkvcalc.input.fields, lists it)
    # the key's value, checked (a QkvcalcError if it is wrong); None: the feature is not used.
    # A feature of several keys (`keys`) reads a dict of those given.
    read: Callable[[Any, Sizes], Any]
    keys: tuple[str, ...] = ()  # its keys, when it has more than one (then `name` is none)
    ops: tuple[Op, ...] = ()  # the operations its stages are
    # its stage on a head's queries or keys (after the projections; None: not on this side)
    turn: Callable[[Problem, Any, Turn], Spec | None] | None = None
    # its stage on a head's values (after the projection: a norm on V); the output reads the last
    turn_v: Callable[[Problem, Any, Turn], Spec | None] | None = None
    # whether its value puts its turn after every other feature's (a norm after the rotation)
    late_turn: Callable[[Any], bool] | None = None
    # what it says on the scores: notes, and a remark given the q and k refs before its turn
    scores_notes: Callable[[Any], tuple[Msg, ...]] | None = None
    scores_remark: Callable[[Problem, Any, int | None, Ref, Ref], Any] | None = None
    # its stages on a head's logits (after the scaling, before the mask); the last is read on
    logits: Callable[[Problem, Any, Logits], Sequence[Spec]] | None = None
    # how it changes a head's softmax: the planned exp and weights stages in, its own out
    softmax: Callable[[Problem, Any, Spec, Spec, Reading], tuple[Spec, Spec]] | None = None
    # the causal mask narrowed: given pos_i − pos_j ([n, m]) and the positions of the queries
    # ([n]) and of the keys ([m]), the keys it still allows
    causal: Callable[[Any, np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None
    mask_notes: Callable[[Any], tuple[Msg, ...]] | None = None  # what it says on the mask
    # attention in tiles: where the online softmax starts, (m₀, ℓ₀) of head h (−∞, 0 without)
    tiles_start: Callable[[Any, int | None], tuple[float, float]] | None = None
    mistakes: tuple[Mistakes, ...] = ()  # the quiz's named mistakes at its stages
    lazy_stages: int = 0  # the n×m stages it adds to each head (the size budget counts them)
    # the numbers its kept stages add to one head, given (value, n, m, d_k): the size budget
    elements: Callable[[Any, int, int, int], int] | None = None
    # the run's header lines: (catalog key, its values)
    header: Callable[[Any], list[tuple[str, dict[str, Any]]]] | None = None
    # its value in a JSON trace's "input" (a feature of several keys: a dict of them)
    echo: Callable[[Any], Any] = lambda value: value
    order_reason: str = ""  # the catalog key that says it reads the tokens' order (positions)
    words: tuple[str, ...] = ()  # the words of its formulas set upright in LaTeX (a name)
    worksheet_notes: tuple[str, ...] = ()  # its notes that tell no result (a worksheet keeps)
    # --format torch: the lines that turn `scores` ([1, H, n, m], scaled and biased) into this
    # feature's logits when the attention is written out (SDPA has no place for it)
    torch_logits: Callable[[Any, Callable[[float], str]], list[str]] | None = None
    # … and the lines that make `weights` [1, H, n, m] from the masked `scores` instead of
    # torch.softmax (given the value and how to write an array as an ASCII literal)
    torch_softmax: Callable[[Any, Callable[[Any], str]], list[str]] | None = None
    # --backward: the gradients of its own learned numbers, as stages after the weights,
    # given each head's (weights, softmax row term) refs; in tiles (no stage holds the weights)
    # each head's (log-sum-exp LSE = m + log ℓ [n, 1], D = rowsum(dO ⊙ O) [n, 1]) refs
    grads: Callable[[Problem, Any, list[tuple[Ref, Ref]]], list[Spec]] | None = None
    # --format torch --backward: (how its gradient is named, the tensor of the script that holds
    # its learned numbers, a leaf of autograd's graph), compared with its `grads` stage
    torch_leaf: tuple[str, str] | None = None
    # --format torch --backward: what else the script compares, given the problem, the value
    # and how to find a stage by id: (the gradient's name, the script's tensor, qkvcalc's
    # gradient in that tensor's layout), the latents' weights of multi-head latent attention
    torch_compared: (
        Callable[[Problem, Any, Callable[[str], Any]], list[tuple[str, str, Any]]] | None
    ) = None
    torch_module_gap: str = ""  # why nn.MultiheadAttention cannot check it
    # --format torch: the lines that narrow `causal` ([n, m] bool) given `distance` (pos_i − pos_j),
    # `positions` and `key_positions`
    torch_mask: Callable[[Any], list[str]] | None = None
    # --format torch: the lines that turn each head's q and k ([1, heads, rows, d_k]), given the
    # problem, the value, how to write an array and a number as ASCII literals
    torch_qk: (
        Callable[[Problem, Any, Callable[[Any], str], Callable[[float], str]], list[str]] | None
    ) = None
    # --format torch: how its score bias is made (a comment) and head h's bias B ([n, m]),
    # added to the scaled scores (SDPA's float attn_mask takes it)
    torch_bias: Callable[[Problem, Any, int | None], tuple[str, np.ndarray]] | None = None
    # a feature that stands in for W_Q, W_K and W_V (multi-head latent attention): its key read
    # with the weights, given (its value, the document, d_model, H, the layout, exact), to a
    # value whose `widths` are the columns the heads split (H·d_k, G·d_k, G·d_v)
    projects: Callable[[Any, dict[str, Any], int, int, str, bool], Any] | None = None
    # … what `qkvcalc train` steps of it (its latents' weights), or None: train refuses it
    learns: Learns | None = None
    # … its stages before the heads, given the problem, the value, X's ref and name
    shared: Callable[[Problem, Any, Ref, str], list[Spec]] | None = None
    # … and head h's q, k, v stages (with its own between them), the same arguments and h
    head_qkv: Callable[[Problem, Any, int | None, Ref, str], list[Spec]] | None = None
    # --format torch: the lines that make Q [n, H*d_k], K, V from X in its place
    torch_projections: (
        Callable[[Problem, Any, Callable[[Any], str], Callable[[float], str]], list[str]] | None
    ) = None
    # decode: its stages of one step before the heads (the cache of what it keeps), given the
    # problem, the value, the step, its rows, the step before (None: the first), X's ref and
    # name, and how the features turn one side (`turn(problem, side, specs) -> its ref`)
    decode_shared: Callable[..., list[Spec]] | None = None
    # … and head h's stages of the step: (q, k and v, then the refs of K and V read)
    decode_head: Callable[..., tuple[list[Spec], Ref, Ref]] | None = None
    # the features whose refusal of --decode its cache makes untrue (value -> their names): the
    # one key/value head cached turned, which is then already V turned as the keys are
    decode_covers: Callable[[Any], tuple[str, ...]] | None = None
    # the quiz's view of the problem: the matrices it gives in place of W_Q, W_K, W_V (by name)
    given: Callable[[Any], list[tuple[str, np.ndarray]]] | None = None
    # its stages after head h's output (given the problem, the value, h and the output's
    # spec); the last of them is what the concat reads, and a problem that uses it has
    # per-head stages, a concat and a final output even with one head
    after_output: Callable[[Problem, Any, int | None, Spec], list[Spec]] | None = None
    # --format torch: the lines that change `heads` ([1, H, n, d_v]) before the concat, given
    # the problem, the value and how to write an array as an ASCII literal; and the gradients
    # its script compares after autograd: (name, the tensor, the stage id whose value it is,
    # whether that stage's one row is the tensor's vector), each tensor a leaf of the graph
    torch_heads: Callable[[Problem, Any, Callable[[Any], str]], list[str]] | None = None
    torch_grads: tuple[tuple[str, str, str, bool], ...] = ()
    # its stages after every head, before the concat (given the problem, the value and what the
    # concat would read, each head's last stage): the stages, and what the concat reads instead
    # (its spans are their widths): pairs of heads, one output each pair
    joined: Callable[[Problem, Any, list[Ref]], tuple[list[Spec], list[Ref]]] | None = None
    joined_words: JoinWords | None = None  # how the concat names what `joined` gives it
    # whether its value adds stages after every head (`joined`): a problem then has per-head
    # stages, a concat and a final output even with one head (a linear layer's norm after the
    # heads)
    joins: Callable[[Any], bool] | None = None
    torch_weights: bool = False  # its torch_heads lines read each head's `weights` [1, H, n, m]
    no_decode: str = ""  # the catalog key that refuses it with --decode (it has no steps yet)
    no_tiles: str = ""  # the catalog key that refuses it with --tiles (no stage holds weights)
    # torch's scaled_dot_product_attention has no place for it: --dtype … --policy sdpa refuses
    # it (one message naming it), tiles or not; or the catalog key that refuses it so
    no_sdpa: bool | str = False
    no_train: str = ""  # the catalog key that refuses `train` (it cannot learn its numbers yet)
    # what `train` says of it beside the header: the catalog key of a sentence (a sparse top-k's
    # weights left as given, since the loss gives them no gradient), or given its value that
    # key ("": none)
    train_note: str | Callable[[Any], str] = ""
    # --backward: its notes on the backward's stages, given the problem, the value and those
    # stages (in order): the stages with its notes added (a top-k's choice held fixed)
    back_notes: Callable[[Problem, Any, list[Spec]], list[Spec]] | None = None
    no_backward: str = ""  # the catalog key that refuses --backward (it has no gradients yet)
    # given its value: the catalog key that refuses --backward for it ("" to go on): a layer
    # whose own pieces have no gradients yet, when it has them
    no_backward_when: Callable[[Any], str] | None = None
    # given its value: the catalog key that refuses `train` for it ("" to train): a layer whose
    # own learned numbers train does not move yet, when it has them
    no_train_when: Callable[[Any], str] | None = None
    no_dtype: str = ""  # the catalog key that refuses --dtype (its ops have no rounding rules)
    # --dtype: the catalog keys of the summary that says how each policy computes it, in place
    # of the softmax attention's (a layer that is not softmax attention): (policy, key) pairs,
    # "eager_fp8" for eager's scaled float8
    lowp_policy: tuple[tuple[str, str], ...] = ()
    alone: str = ""  # the catalog key that refuses it beside any other feature
    # the features it cannot stand beside: (the other's name, the catalog key that says why)
    refuses: tuple[tuple[str, str], ...] = ()
    # the features it cannot go without: (the other's name, the catalog key that says why)
    needs: tuple[tuple[str, str], ...] = ()
    # its stages before the heads, after those of the feature that stands in for W_Q, W_K, W_V,
    # given the problem, the value, X's ref and name, and the keys the mask allows before any
    # feature selects ([n, m] bool, None: all)
    before_heads: Callable[[Problem, Any, Ref, str, Any], list[Spec]] | None = None
    # the keys each query keeps, chosen from the numbers (a sparse attention's top-k):
    # given the problem, the value and the keys allowed so far (None: all), the [n, m] bool
    # mask every head's `masked` stage then applies
    select: Callable[[Problem, Any, Any], np.ndarray] | None = None
    # --format torch: the lines that narrow `allowed` ([n, m] bool) to the keys it keeps, given
    # the problem, the value and how to write an array and a number
    torch_select: (
        Callable[[Problem, Any, Callable[[Any], str], Callable[[float], str]], list[str]] | None
    ) = None
    # keys of its own after the tokens' (DeepSeek-V4's compressed entries): given the problem,
    # the value, head h and the refs of its turned keys and values, the stages that append its
    # rows to both (the last two: the keys, then the values the output reads); and the labels
    # of those rows (the keys' columns after the tokens')
    more_keys: Callable[[Problem, Any, int | None, Turn, Turn], list[Spec]] | None = None
    key_labels: Callable[[Problem, Any], tuple[str, ...]] | None = None
    # a layer that is not softmax attention (a linear-attention layer): head h's stages after
    # its q, k, v in place of the scores, softmax and A·V, each with the step it belongs to
    # (0: none; the schedule stamps it); the last is the head's output
    mixer: Callable[[Problem, Any, int | None, list[Spec]], list[tuple[int, Spec]]] | None = None
    formula: tuple[str, str] | None = None  # … and its formula in a page's header (plain, TeX)
    # … and --format torch: the lines that make `heads` ([1, H, n, d_v]) from q, k, v in place
    # of SDPA, given the problem, the value and how to write an array and a number
    torch_layer: (
        Callable[[Problem, Any, Callable[[Any], str], Callable[[float], str]], list[str]] | None
    ) = None
