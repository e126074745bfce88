"""English messages. Every user-facing sentence of qkvcalc, by key; ko.py has the same keys."""

MESSAGES: dict[str, str] = {
    # ---- stages: title and why the stage exists ------------------------------------------
    "stage.x.title": "Input X",
    "stage.x.why": "Each row is one token's vector as it enters the attention layer: in the "
    "original Transformer's first layer an embedding plus its position, in a deeper layer the "
    "output of the layer below, and in a pre-norm model (GPT-2, Llama) that vector after the "
    "layer's norm (ln_1 in GPT-2: each row normalised, then scaled and shifted by the norm's own "
    "weights). In the first layer the embedding table made the embeddings from token ids; W_Q, "
    "W_K and W_V are not that table but parameters of their own, learned separately, that turn "
    "the rows into attention's three roles.",
    "stage.source.title": "Source (keys and values come from here)",
    "stage.source.why": "In cross-attention the queries come from X, but the keys and values "
    "come from another sequence, such as the encoder's output that a decoder reads.",
    "stage.split.title": "Split into heads",
    "stage.split.why": "Every head reads the whole input. What is split are the projections: the "
    "columns of W_Q, W_K and W_V (of Q, K and V when they are given) are cut into one slice per "
    "head, so each head has its own Q, K and V (under grouped-query attention, a K and V shared "
    "with its group) and can learn its own notion of which tokens matter. The heads run side by "
    "side and are joined at the end.",
    "stage.q.title": "Query projection",
    "stage.q.why": "A query is what this token is looking for: a vector of numbers, not a "
    "question in words. Multiplying X by the learned W_Q re-mixes each token's numbers into that "
    "role; each cell is a weighted sum of one row of X. Every token of the head is multiplied by "
    "the same W_Q, learned once, which is why the head works on sentences it never saw. X itself "
    "could serve as Q, K and V, but tokens would then be compared only by how alike they are: "
    "separate matrices let what a token looks for differ from what it offers and what it passes "
    "on.",
    "stage.k.title": "Key projection",
    "stage.k.why": "A key is what a token offers to be matched against. W_K is learned "
    "separately from W_Q, so what a token looks for and what it is found by can differ. In "
    "self-attention K comes from the same X as Q; in cross-attention, from the source.",
    "stage.v.title": "Value projection",
    "stage.v.why": "A value is the content a token passes on to every query that attends to "
    "it, in proportion to that query's weight: attention blends, it does not pick one. The "
    "scores only say how much each token matters; V carries what is actually mixed into the "
    "output. Q, K and V are not three kinds of token: they are three projections of the same "
    "token's row.",
    "stage.v_state.title": "Value projection",
    "stage.v_state.why": "A value is the content a token writes into the state along its Key: "
    "its own output and every later one read it back, each by its weight W[t,s] in the matrix "
    "below (the layer "
    "blends, it does not pick one). q and k decide where it is written and read; V carries what "
    "is actually mixed into the output. Q, K and V are not three kinds of token: they are three "
    "projections of the same token's row.",
    "stage.q_given.title": "Queries Q (given)",
    "stage.q_given.why": "Q is given directly, so there is no projection to compute: each row is "
    "one token's query, what it is looking for, as the numbers typed in.",
    "stage.k_given.title": "Keys K (given)",
    "stage.k_given.why": "K is given directly, so there is no projection to compute: each row is "
    "one token's key, what it offers to be matched against.",
    "stage.v_given.title": "Values V (given)",
    "stage.v_given.why": "V is given directly, so there is no projection to compute: each row is "
    "the content one token passes on to the queries that attend to it.",
    "stage.kt.title": "Transpose of K",
    "stage.kt.why": "Q is n×d_k and K is m×d_k. Turning K on its side (m×d_k into d_k×m) makes "
    "the inner dimensions meet, so one matrix product compares every query with every key.",
    "stage.scores.title": "Attention scores",
    "stage.scores.why": "Each cell is the dot product of one query with one key, "
    "q·k = |q|·|k|·cos θ: its sign is the sign of cos θ (positive when the angle between them "
    "is less than a right angle, negative when it is more), and its size grows with their "
    "lengths. All n×m pairs are computed at once, with no path through the tokens between "
    "them (a recurrent network reaches token 1 from token 9 only through the eight steps "
    "between, one after another). The price: the cost and the memory of this table grow with "
    "n·m (n² in self-attention, where m = n); at 100,000 tokens one head's table is 10¹⁰ "
    "numbers, which is what limits long contexts.",
    "stage.scores.decode.title": "Attention scores",
    "stage.scores.decode.why": "Each cell is the dot product of the new token's query with one "
    "cached key, q·k = |q|·|k|·cos θ. A step computes this one row, a dot product with each key "
    "cached so far (its own included), instead of the whole table again: each step's work grows "
    "with the cache. The steps' rows and the prefill's P×P table (none when P = 0) hold every "
    "score the causal mask allows, n(n + 1)/2 of them, and the P(P − 1)/2 above the prefill's "
    "diagonal, which its mask hides.",
    "stage.scores.prefill.title": "Attention scores",
    "stage.scores.prefill.why": "Each cell is the dot product of one query with one key, "
    "q·k = |q|·|k|·cos θ: its sign is the sign of cos θ (positive when the angle between them "
    "is less than a right angle, negative when it is more), and its size grows with their "
    "lengths. The prefill computes the pairs of its own P tokens at once, a P×P table as in an "
    "ordinary run; each later token adds one row at its decode step, so this run never "
    "computes the whole n×n table at once.",
    "stage.scaled.title": "Scaling",
    "stage.scaled.why": "If the components of q and k are independent, with mean 0 and "
    "variance 1, their dot product (a sum of d_k such products) has mean 0 and variance d_k: "
    "its typical size is √d_k. Dividing by √d_k brings the variance back to 1 whatever d_k is. "
    "Softmax ignores a constant added to a whole row; what makes it put almost all weight on "
    "one key is a large spread of the scores within a row. There the softmax saturates: its "
    "derivative A·(1 − A) is near 0, so when the loss reaches the scores through A·V, as a "
    "model's does, little gradient gets back to them and learning slows (a loss on log A "
    "itself, −Σ log A, cancels that derivative).",
    "stage.masked.title": "Mask",
    "stage.masked.why": "A mask forbids some query–key pairs (future tokens, padding) by "
    "setting their scores to −∞, so softmax gives them weight exactly 0.",
    "stage.exp.title": "Softmax, part 1: exponentials",
    "stage.exp.why": "Softmax exponentiates each score. Subtracting the row's maximum first "
    "changes nothing in the result (it cancels in the division) but keeps e^s from "
    "overflowing.",
    "stage.weights.title": "Softmax, part 2: attention weights",
    "stage.weights.why": "Dividing each exponential by its row's sum turns the scores into "
    "weights from 0 to 1 that add up to 1 in each row: how much of each value this query takes. A "
    "masked key gets exactly 0, and a row whose keys are all masked is 0 throughout.",
    "stage.weights.sinks.title": "Softmax, part 2: attention weights, with the sink",
    "stage.weights.sinks.why": "Dividing each exponential by its row's sum, the sink's included, "
    "turns the scores into weights from 0 to 1; the sink's column is then dropped, so each row "
    "adds up to 1 minus what the sink took. A masked key gets exactly 0.",
    "stage.tiles_start.title": "Before the first block: where the online softmax starts",
    "stage.tiles_start.why": "The running maximum, sum and output usually start empty (m₀ = −∞, "
    "ℓ₀ = 0, O₀ = 0). Here a column was seen before every key (the sink), so they start from it; "
    "each block then updates them as usual.",
    "note.tiles_start": "m₀ = {m0} and ℓ₀ = {l0}: the sink's own column, e^(σ − σ) = 1, counted "
    "before the first key; its value is 0, so the output starts at 0.",
    "stage.output.title": "Weighted sum of values",
    "stage.output.why": "Each output row is that query's row of weights times V: a weighted "
    "average of the value rows, pulled toward the values of the keys with the largest weights.",
    "stage.concat.title": "Concatenate the heads",
    "stage.concat.why": "The heads' outputs are laid side by side, head 1's columns first: one "
    "row per token, H·d_v wide.",
    "stage.output.final.title": "Output projection",
    "stage.output.final.why": "W_O lets every output feature combine all the heads: concat·W_O = "
    "Σ_h head_h·W_O[rows of head h], so with two heads or more, what one head found is mixed with "
    "what the others found. W_O also sets the width, usually back to d_model, so the result can be "
    "added to the layer's input (the residual connection).",
    "stage.output.concat.title": "Output (the joined heads)",
    "stage.output.concat.why": "With no W_O given, the joined heads are the output.",
    # ---- notes on stages ---------------------------------------------------------------
    "note.scale_default": "d_k = {d_k}, so every score is divided by {root} {eq} {value}.",
    "note.scale_given": "scale {eq} {scale} (given), instead of 1/√d_k with d_k = {d_k}.",
    "note.mask_convention": "Mask convention: 1 / true = may attend (PyTorch's "
    "scaled_dot_product_attention). nn.MultiheadAttention's boolean masks mean the opposite "
    "(True = blocked).",
    "note.causal_topleft": "Causal mask with n = {n} and m = {m} (queries and keys): aligned "
    "top-left, as is_causal=True, so query i sees keys 1…i. When the queries are the last n of "
    "the m tokens (decoding with a KV cache), the mask is aligned bottom-right instead: query i "
    'sees keys 1…m − n + i ("causal_align": "bottom-right" asks for that).',
    "note.kv_shared": "Grouped-query attention: K/V head {kv_head} is shared by query heads "
    "{first}–{last}.",
    "note.split": "Query heads: H = {heads}, each with d_k = {d_k}. Key/value heads: "
    "G = {kv_heads}, each with d_k = {d_k} and d_v = {d_v}. Query head h reads K/V head "
    "⌈h·G/H⌉.",
    "note.no_arithmetic": "Arithmetic left out: {reason}.",
    "note.too_big_cells": "{cells} cells, more than {limit} to write out",
    "note.too_long_sums": "each cell sums {inner} products, more than {limit}",
    "note.hidden": "Not shown (…): {rows} of the rows and {cols} of the columns.",
    "note.hidden_rows": "Not shown (⋮): {rows} of the rows.",
    "note.hidden_cols": "Not shown (…): {cols} of the columns.",
    "note.brief": "Tables only (--detail brief).",
    "note.brief_steps": "Not shown (--detail brief): {from_symbol} … {to_symbol}, the states "
    "after tokens {first} to {last}, {count} of this head's {total}. --detail full shows every "
    "one (this head's alone: --stages {id} --head {head} --detail full).",
    "note.brief_grad_steps": "Not shown (--detail brief): {from_symbol} … {to_symbol}, the "
    "gradients of the states after tokens {first} down to {last}, {count} of this head's {total}. "
    "--detail full shows every one (this head's alone: --stages {id} --head {head} --detail "
    "full).",
    "note.rounded": "≈: the numbers in the arithmetic are shown rounded to {precision} "
    "{precision:decimal|decimals}, and the result is computed from the unrounded ones, so redoing "
    "it by hand can differ in the last digit.",
    # ---- reading the attention out (qkvcalc.readout) ------------------------------------
    "note.reading_title": "Read out: each query's strongest keys",
    "note.reading": "{query} → {keys}",
    "note.reading_with_masked": "{query} → {keys}; masked: {masked}",
    "note.reading_all_masked": "{query} → every key masked, so no weight at all",
    "ui.reading_key": "{token} {percent}%",
    "ui.reading_key_small": "{token} <1%",
    "ui.reading_rest": "the others {percent}%",
    "ui.reading_rest_small": "the others <1%",
    "note.reading_equal": "{query} → its {count} {count:key|keys} equally, 1/{count} each",
    "note.reading_equal_with_masked": "{query} → its {count} {count:unmasked key|unmasked keys} "
    "equally, 1/{count} each; masked: {masked}",
    "ui.reading_equal": "its {count} {count:key|keys} equally, 1/{count} each",
    "ui.reading_none": "every key masked",
    "note.reading_rounding": "Percentages are whole numbers, rounded so that each query's "
    "percentages add up to 100; <1% is a weight above 0 that rounds to 0.",
    "note.reading_rounding_ties": "Equal weights always get equal percentages, so a query "
    "whose equal weights cannot all take the last points adds up to a little less than 100.",
    "note.geometry": "One score as lengths and an angle: {query}·{key} = |q|·|k|·cos θ = "
    "{q_norm} × {k_norm} × {cos} = {value}.",
    "note.geometry_zero": "{query}·{key} = 0: the query or the key is the zero vector, so it "
    "has no direction and the angle θ is undefined.",
    "note.geometry_lesson": "The query of {query} points most closely along the key of "
    "{aligned} (cos θ = {cos_aligned}), yet its largest score is with {strongest} "
    "(cos θ = {cos_strongest}), whose key is longer (|k| = {k_strongest} against "
    "{k_aligned}): a dot product weighs length as well as direction.",
    "note.why_scale_shown": "Why scale, shown for {query}: without 1/√d_k → {unscaled}; "
    "with it → {scaled}.",
    "note.why_scale_shown_given": "Why scale, shown for {query}: without the scale {scale} → "
    "{unscaled}; with it → {scaled}.",
    "note.why_scale_variance": "Why √d_k and not d_k: with components of mean 0 and variance "
    "1, q·k has variance d_k = {d_k}, so scores typically reach ±{root}; divided by √d_k their "
    "variance is 1 again.",
    "note.scale_temperature": "Multiplying the scores by a scale c is a softmax at temperature "
    "T = 1/c: a smaller c (higher T) flattens the weights toward equal shares, a larger c "
    "sharpens them toward the largest score. The default c = 1/√d_k is T = √d_k {eq} {root}.",
    "note.scale_zero": "A scale of 0 makes every scaled score 0, whatever Q and K are: the "
    "weights no longer depend on them.",
    "note.scale_negative": "A negative scale turns the scores' order round: of two keys, the one "
    "with the smaller q·k gets the larger scaled score and, all else equal, the larger weight, "
    "the opposite of what attention is for.",
    "note.shuffle": "Attention by itself does not see order: with no positional information and "
    "no causal mask, shuffling the tokens only shuffles the output rows the same way, each row's "
    "numbers unchanged. Order reaches attention only through positions (added to X, or rotated "
    "into Q and K) or through a mask such as the causal one.",
    "note.shuffle_try": 'See it: add --shuffle "{order}" (the token numbers in a new order).',
    "note.shuffle_demo": "Tokens shuffled to {order}: each token's output row is the same as "
    "before, only moved with the token to its new place (largest difference {diff}).",
    "note.shuffle_changed": "Tokens shuffled to {order}: the output rows are not those of the "
    "original order moved along (largest difference {diff}), because this attention sees the "
    "order through {reasons}.",
    "shuffle.by_causal": "the causal mask (which keys come before a query depends on the order)",
    "shuffle.by_pe": "the position encoding added to X",
    "shuffle.by_rope": "RoPE (q and k are rotated by their positions)",
    "shuffle.by_bias": "a bias that depends on positions (ALiBi or score_bias)",
    "shuffle.by_custom_mask": "the 0/1 mask (its rows and columns moved with the tokens, but a "
    "mask of positions, such as a window, would not)",
    "shuffle.not_a_number": "--shuffle: {word!r} is not a token number; write the numbers 1 to "
    "{n}, each once, in their new order",
    "shuffle.not_a_permutation": "--shuffle {given!r}: the new order must name each token number "
    "1 to {n} exactly once (n = {n} {n:token|tokens})",
    "help.explain.shuffle": 'Shuffle the tokens to this order of their numbers ("3 1 2") and '
    "compare the output with the original's: without positions or a causal mask, only the "
    "rows move.",
    "note.single_key": "With a single key, softmax always gives it weight 1 (e^0 / e^0), "
    "whatever its score: there is nothing to compete with. To see weights compete, try the "
    "sentence preset: qkvcalc explain --preset sentence.",
    "note.single_key_masked": "With a single key, softmax gives it weight 1 (e^0 / e^0) in every "
    "row that may see it, whatever its score: there is nothing to compete with. A row whose key "
    "the mask hides is 0 throughout. To see weights compete, try the sentence preset: qkvcalc "
    "explain --preset sentence.",
    "note.gqa_why": "Why share: when a model generates text it keeps every past token's keys "
    "and values in a KV cache. With G = {kv_heads} instead of H = {heads} key/value heads, that "
    "cache is {ratio} times smaller, at little cost in quality (Ainslie et al. 2023).",
    "note.pad_rows": "The <pad> rows still get outputs: key_padding masks keys (columns), not "
    "queries (rows), so a padding token's query attends to the real tokens like any other. "
    "Nothing uses those rows: no query attends to a padding key, and the loss and any pooling "
    "leave padding positions out.",
    "note.self_attention": "Self-attention: the queries, the keys and the values all come from "
    "the same X, so each token is compared with every token of its own sequence, itself "
    "included.",
    "note.self_attention_state": "Self-attention: the queries, the keys and the values all "
    "come from the same X. This layer compares no pair of tokens directly: each token writes its "
    "value into the state along its key and reads the state with its query, so each token reads "
    "what it and the tokens before it wrote.",
    "note.dv": "d_v = {d_v} sets the width of the output: V is m×d_v, so A·V is n×d_v. It need "
    "not equal d_k = {d_k}: the weights decide how much of each value a query takes, d_v how "
    "many numbers each value carries.",
    "note.dv_state": "d_v = {d_v} sets the width of the output: V is m×d_v and the state "
    "d_k×d_v, so each output row, the state read with a Query row of d_k numbers, has d_v "
    "numbers. It need not equal d_k = {d_k}: the state has a row per Key channel and a column "
    "per number of a value.",
    "note.layout_torch": "{weight} was given as PyTorch stores it (out×in); the matrix shown "
    "is its transpose {weight}ᵀ (in×out), which the rows are multiplied by.",
    # ---- warnings ------------------------------------------------------------------------
    "warn.fully_masked": "Every key is masked for {rows}: the plain formula would give "
    "0/0 = NaN there, so those weights and outputs are 0, as PyTorch's "
    "scaled_dot_product_attention returns.",
    "warn.fully_masked_head": "Head {head}: every key is masked for {rows}: the plain formula "
    "would give 0/0 = NaN there, so those weights and outputs are 0, as PyTorch's "
    "scaled_dot_product_attention returns.",
    "warn.tokens_dropped": "The input's tokens ({count}) do not fit the {rows} {rows:row|rows} of "
    "--x, so they were dropped: the tokens are named t1, t2, …",
    # ---- the words of tables and arithmetic ------------------------------------------------
    "ui.gap_rounding": "below {bound}",
    "ui.head": "head {head}",
    "ui.heads_group": "Head {head} of {heads}",
    "ui.pair": "pair {pair}",
    "ui.pairs_group": "Pair {pair} of {pairs}",
    "ui.softmax_row": "row {row} ({token}): max = {max}; sum of exponentials = {sum}",
    "ui.masked_row": "row {row} ({token}): {keys} → -∞",
    "ui.masked_row_lowp": "row {row} ({token}): {keys} masked (the note says what a masked cell "
    "gets)",
    "ui.all_masked_row": "row {row} ({token}): every key masked, weights 0",
    "ui.warning": "warning",
    "ui.output_final": "Output",
    "ui.arithmetic": "Arithmetic",
    "ui.problem": "queries n = {n}, keys m = {m}, d_model = {d_model}, d_k = {d_k}, "
    "d_v = {d_v}, heads = {heads}, mask: {mask}",
    "ui.problem_direct": "queries n = {n}, keys m = {m} (Q, K, V given), d_k = {d_k}, "
    "d_v = {d_v}, heads = {heads}, mask: {mask}",
    "ui.variants": "with {items}",
    "ui.variant.pe_sinusoidal": "sinusoidal position encoding",
    "ui.variant.pe_given": "a position encoding given",
    "ui.variant.qk_norm": "q/k RMSNorm",
    "ui.variant.rope": "RoPE (base {theta}, {style}, {dims} dims)",
    "ui.variant.alibi": "ALiBi",
    "ui.variant.score_bias": "a score bias",
    "ui.variant.sinks": "attention sinks",
    "ui.variant.softcap": "softcap {cap}",
    # ---- the output gate (qkvcalc/ops/gate.py) ----
    "ui.variant.gate": "output gate σ(X·W_G{bias}) on each head",
    "stage.gate_logits.title": "Output gate: the gate's logits",
    "stage.gate_logits.why": "The gate is decided by the token itself: X times this head's "
    "columns of W_G (plus b_G) gives one number per token and per column of the head's output, "
    "which the next stage squashes into (0, 1).",
    "stage.gate.title": "Output gate: G = σ(Z_G)",
    "stage.gate.why": "The sigmoid σ(z) = 1 / (1 + e^(−z)) squashes each logit into (0, 1): a "
    "large negative logit gives a gate near 0, a large positive one a gate near 1, and 0 gives "
    "exactly 0.5.",
    "stage.gated.title": "The gated output",
    "stage.gated.why": "Each cell of the head's output is multiplied by its gate: a gate near 0 "
    "silences that column of this head for this token, a gate near 1 lets it through. The "
    "attention weights decide what to read; the gate decides, token by token, how much of what "
    "was read to pass on (Qwen3-Next and Qwen3.5 gate their attention this way). The "
    "concatenation reads these gated outputs.",
    "hint.gate": "{cell} = σ(Z_G[{i},{j}]) = 1 / (1 + e^(−Z_G[{i},{j}])).",
    "hint.gated": "{cell} = {out}[{i},{j}] × G[{i},{j}]: the head's output times its gate, cell "
    "by cell.",
    "note.exact_stops_sigmoid": "No exact fractions from here on: σ(z) = 1 / (1 + e^(−z)) is "
    "irrational for every rational z ≠ 0 (e^(−z) is then transcendental, by the "
    "Lindemann–Weierstrass theorem); σ(0) = 1/2 is the one exception.",
    "mistake.gate_missing": "These are the head's output before the gate: each cell still has "
    "to be multiplied by its gate G = σ(Z_G).",
    "mistake.gate_not_squashed": "These multiply the output by the gate's logits Z_G, not by "
    "G = σ(Z_G): the sigmoid that squashes each logit into (0, 1) was left out.",
    "stage.grad_output.gated.title": "Backward through the gate to the head's output",
    "stage.grad_output.gated.why": "out_G = out ⊙ G, so each cell of the head's output receives "
    "its gradient times its own gate: dO = d(out_G) ⊙ G. A gate near 0 passes almost nothing "
    "back to the attention below it.",
    "stage.grad_gate.title": "Backward: gradient of the gate",
    "stage.grad_gate.why": "The same product seen from the gate's side: dG = d(out_G) ⊙ out, so a "
    "gate's gradient is its gated output's gradient times what the head read: where the head's "
    "output is 0, its gate learns nothing.",
    "stage.grad_gate_logits.title": "Backward through the sigmoid",
    "stage.grad_gate_logits.why": "σ'(z) = σ(z)·(1 − σ(z)), at most 1/4 (at z = 0): "
    "dZ_G = dG ⊙ G ⊙ (1 − G). A gate that is nearly shut or nearly open (G near 0 or 1) passes "
    "little of its gradient on to W_G.",
    "stage.grad_wg.title": "Gradient of W_G",
    "stage.grad_wg.why": "Z_G = X·W_G (+ b_G), so dW_G = Xᵀ·dZ_G, each head's gradient in its "
    "own columns: each weight collects, over the tokens, its input value times its logit's "
    "gradient.",
    "stage.grad_bg.title": "Gradient of b_G",
    "stage.grad_bg.why": "b_G is added to every token's gate logits, so its gradient is the "
    "column sums of dZ_G.",
    "gate.shape": "W_G (wg) is {shape}, but the output gate needs {want} in the {layout} layout: "
    "it maps each token's row of X (d_model numbers) to H·d_v = {heads}×{d_v} gates, one per "
    "column of every head's output.",
    "gate.bias_shape": "b_G (bg) has length {length}, but the output gate has H·d_v = {cols} "
    "columns: one bias per gate.",
    "gate.bias_alone": "b_G (bg) is given without W_G (wg): the output gate's bias needs its "
    "weight.",
    "gate.needs_x": "The output gate (wg) reads X, but this problem gives Q, K and V directly: "
    "give x and the weights instead.",
    "gate.train": "train does not learn the output gate's W_G and b_G yet, and would show the "
    "attention learning around a gate it leaves as given: leave out wg and bg to train, or see "
    "their gradients with explain --backward.",
    "gate.decode": "The output gate (wg) is not computed step by step with a KV cache: leave out "
    "--decode (the whole run shows it).",
    "ui.variant.gate_softplus": "output gate softplus(X·W_G{bias}) on each head",
    "stage.gate_logits_softplus.title": "Output gate: the gate's logits",
    "stage.gate_logits_softplus.why": "The gate is decided by the token itself: X times this "
    "head's columns of W_G (plus b_G) gives one number per token and per column of the head's "
    "output, which the next stage turns into a positive gate with softplus.",
    "stage.gate_softplus.title": "Output gate: G = softplus(Z_G)",
    "stage.gate_softplus.why": "softplus(z) = ln(1 + e^z) turns each logit into a positive "
    "number with no upper bound, not one in (0, 1): a large negative logit gives a gate near 0, "
    "a large positive one a gate close to the logit itself, and 0 gives ln 2 ≈ 0.6931 "
    "(Laguna's gate).",
    "stage.gated_softplus.title": "The gated output",
    "stage.gated_softplus.why": "Each cell of the head's output is multiplied by its gate: a "
    "gate near 0 silences that column of this head for this token, a gate above 1 makes it "
    "larger. The attention weights decide what to read; the gate decides, token by token, how "
    "much of what was read to pass on (Laguna gates its attention this way, with softplus). "
    "The concatenation reads these gated outputs.",
    "hint.gate_softplus": "{cell} = softplus(Z_G[{i},{j}]) = ln(1 + e^(Z_G[{i},{j}])).",
    "note.exact_stops_softplus": "No exact fractions from here on: softplus(z) = ln(1 + e^z) is "
    "irrational for every rational z (a rational r with e^r = 1 + e^z would be a linear relation "
    "among e^r, e^z and e^0 that the Lindemann–Weierstrass theorem forbids).",
    "mistake.gate_missing_softplus": "These are the head's output before the gate: each cell "
    "still has to be multiplied by its gate G = softplus(Z_G).",
    "mistake.gate_not_squashed_softplus": "These multiply the output by the gate's logits Z_G, "
    "not by G = softplus(Z_G): the softplus, ln(1 + e^z), was left out.",
    "mistake.gate_sigmoid": "These multiply the output by σ(Z_G), but this gate is "
    "G = softplus(Z_G) = ln(1 + e^(Z_G)), not the sigmoid.",
    "stage.grad_gate_logits_softplus.title": "Backward through the softplus",
    "stage.grad_gate_logits_softplus.why": "softplus'(z) = e^z / (1 + e^z) = σ(z), between 0 "
    "and 1: dZ_G = dG ⊙ σ(Z_G). A gate whose logit is very negative (G near 0) passes little "
    "of its gradient on to W_G; a large logit passes nearly all of it.",
    "gate.act_alone": "gate_act is given without W_G (wg): the output gate's activation needs its "
    "weight.",
    "gate.act": "gate_act is {given}, but the output gate's activation is one of {acts}.",
    # ---- Gated DeltaNet, a linear-attention layer (qkvcalc/ops/gated_delta.py) ----
    "ui.variant.gated_delta": "a linear-attention layer: Gated DeltaNet (Qwen3-Next, Qwen3.5), "
    "its chunked form in chunks of {chunk}",
    "ui.token_step": "token {step}",
    "stage.q_l2.title": "Gated DeltaNet: the Queries, L2-normalized and scaled",
    "stage.q_l2.why": "The layer divides each Query row by its length (√(Σx² + 10⁻⁶), so a row "
    "of zeros stays zeros), then by √d_k (times the problem's scale instead, when one is given), "
    "as transformers' torch_recurrent_gated_delta_rule does "
    "with use_qk_l2norm_in_kernel. Every Query then reads the state with the same strength, "
    "whatever the size of its projection.",
    "stage.k_l2.title": "Gated DeltaNet: the Keys, L2-normalized",
    "stage.k_l2.why": "Each Key row divided by its length: the delta rule below writes β·(v − "
    "S'ᵀk̂) along k̂, and with |k̂| = 1 a β of 1 replaces exactly what the state held for that "
    "Key.",
    "stage.gates.title": "Gated DeltaNet: the decay g and the write strength β of each token",
    "stage.gates.why": "Given per token and per head. g is the decay in log space: the state is "
    "multiplied by e^g before the token writes (Qwen3-Next computes g = −e^(A_log)·softplus(a + "
    "dt_bias), so e^g lies in (0, 1)). β says how much of the correction the token writes "
    "(Qwen3-Next: β = σ(b)).",
    "stage.state.title": "Gated DeltaNet: the state after this token",
    "stage.state.why": "The state S (d_k × d_v) is all the layer keeps of the tokens so far, "
    "however many there were. Each token decays it (S' = e^g·S), reads what it already holds for "
    "its Key (m = S'ᵀ·k̂), and writes the difference from its own Value along its Key: S = S' + "
    "k̂·(β·(v − m))ᵀ. That is the delta rule: it corrects the memory instead of adding to it.",
    "stage.gdn_weights.title": "Gated DeltaNet: the attention matrix it computes without forming "
    "it",
    "stage.gdn_weights.why": "With q, k, g and β fixed, every output row is a weighted sum of "
    "the Value rows of the tokens up to it; these are the weights (one row per query, lower "
    "triangular: the layer is causal). The layer never forms this n×n matrix, only the d_k × d_v "
    "state. Put it beside softmax attention: its rows need not sum to 1 and may be negative, and "
    "a token's weight fades by the decay and by every later write along a similar Key.",
    "stage.chunked.title": "Gated DeltaNet: the chunked form",
    "stage.chunked.why": "What the layer runs on a whole sequence "
    "(torch_chunk_gated_delta_rule): within a chunk, the delta rule's updates solved at once "
    "from one unit lower-triangular system (the DeltaNet paper's UT transform), the state "
    "carried from chunk to chunk. Fewer, larger matrix products than one step per token; the "
    "same output.",
    "stage.gdn_output.title": "Gated DeltaNet: the output read from the state",
    "stage.gdn_output.why": "Each token reads the state it has just written with its Query: o_t "
    "= S_tᵀ·q̂_t. In Qwen3-Next this core output then goes through a gated RMSNorm (times "
    "SiLU(z)) and out_proj, which are not shown here.",
    "note.gdn_l2norm": "l2norm(x) = x / √(Σx² + 10⁻⁶), row by row: transformers' l2norm with eps "
    "= 1e-6.",
    "note.gdn_state": "S_0 = 0. Each cell: e^(g_t)·S_{{t−1}}[i,j] + k̂_t[i]·β_t·(v_t[j] − "
    "m_t[j]), where m_t[j] = e^(g_t)·Σ_r S_{{t−1}}[r,j]·k̂_t[r], what the decayed state holds "
    "for this Key in column j.",
    "note.gdn_weights": "W[t,s] = β_s·k̂_sᵀ·A_(s+1)⋯A_t·q̂_t with A_r = e^(g_r)·(I − "
    "β_r·k̂_r·k̂_rᵀ): token s's write, carried through every later step up to t, read by q̂_t.",
    "note.gdn_weights_work": "Each cell's arithmetic walks its row from the diagonal to the "
    "left: W[t,s] = β_s·(e^(g_(s+1)+…+g_t)·k̂_s·q̂_t − Σ_(r = s+1…t) e^(g_(s+1)+…+g_r)·W[t,r]·"
    "k̂_s·k̂_r). Token s's match with the Query, decayed, less each later token r's weight times "
    "how far k̂_r overlaps k̂_s (the delta rule's overwriting); the dot products come from Q̂ and "
    "K̂ above.",
    "note.gdn_linear_in_v": "W·V equals this output up to rounding: the largest difference is "
    "{diff}. With q, k, g and β fixed the layer is linear in V (before Qwen3-Next's gated norm, "
    "which is not).",
    "note.gdn_linear_in_v_far": "W·V differs from this output by up to {diff}: the numbers are "
    "too large for float64 to keep them equal.",
    "note.gdn_chunked_equal": "The chunked form gives the same output up to rounding: the "
    "largest difference is {diff}.",
    "note.gdn_chunked_far": "The chunked form differs from this output by up to {diff}: the "
    "decays are too extreme for float64 to keep the two forms equal.",
    "note.exact_stops_l2norm": "No exact fractions from here on: the L2 norm divides by √(Σx² + "
    "10⁻⁶), which is irrational for every rational row but a few.",
    "mistake.gdn_decay_missing": "These leave out the decay: the state is never multiplied by "
    "e^(g_t), as if every g_t were 0. Each token first decays the state, S' = e^(g_t)·S_(t−1), "
    "then reads it and writes.",
    "mistake.gdn_delta_missing": "These add β_t·k̂_t·v_tᵀ to the state, as gated linear attention "
    "does (the decay kept, the delta rule left out). The delta rule first reads what the decayed "
    "state holds for the token's Key, m_t = S'ᵀ·k̂_t, and writes only the difference: "
    "S_t = S' + k̂_t·(β_t·(v_t − m_t))ᵀ.",
    "gated_delta.not_object": 'gated_delta must be an object such as {{"g": [...], "beta": '
    "[...]}}, not {value}.",
    "gated_delta.unknown_key": "gated_delta has no key {key}; its keys are {known}",
    "gated_delta.needs": "gated_delta needs both g (each token's decay in log space) and beta "
    "(β, its write strength), one number per token and head, or else wa, wb, a_log and dt_bias "
    "to make them from X.",
    "gated_delta.shape": "gated_delta's {field} is {shape}, but it needs one row per token and "
    "one column per head: n×H = {n}×{heads}.",
    "gated_delta.shape_flat": "gated_delta's {field} is a flat list of {count} "
    "{count:number|numbers}, but it needs one number per token and head: n×H = {n}×{heads} (a "
    "flat list of n numbers only with one head).",
    "gated_delta.g_positive": "gated_delta's g is above 0 at token {token}, head {head}: g is the "
    "decay in log space, and the state is multiplied by e^g ≤ 1 (Qwen3-Next makes "
    "g = −e^(A_log)·softplus(a + dt_bias) < 0).",
    "gated_delta.mask": "A Gated DeltaNet layer is causal by its nature (each token reads the "
    'state written by the tokens up to it): give mask "causal" (the mask here is {mask}: a '
    'problem without a "mask" key has none).',
    "gated_delta.cross": "A Gated DeltaNet layer reads its own tokens: Q has {n} {n:row|rows} but "
    "K and V have {m}; they need the same rows.",
    "gated_delta.kv_heads": "A Gated DeltaNet problem needs as many K/V heads as heads (here "
    "heads = {heads}, kv_heads = {kv_heads}): leave out kv_heads.",
    "gated_delta.chunk": "gated_delta's chunk (the chunked form's chunk size) must be a whole "
    "number of at least 1, not {value}.",
    "gated_delta.alone": "A Gated DeltaNet layer (gated_delta) has no scores and no softmax, so "
    "the other features of attention do not apply to it: leave out {others}.",
    "gated_delta.decode": "A Gated DeltaNet layer (gated_delta) already runs token by token "
    "through its state: leave out --decode.",
    "gated_delta.tiles": "A Gated DeltaNet layer (gated_delta) has no softmax to compute in "
    "tiles: leave out --tiles.",
    # ---- lightning attention, MiniMax's linear-attention layer (qkvcalc/ops/lightning.py) ----
    "ui.variant.lightning": "a linear-attention layer: MiniMax's lightning attention, each "
    "head's decay rate λ: {slopes}, its blocked form in blocks of {block}",
    "stage.q_silu.title": "Lightning attention: silu of the Queries",
    "stage.q_silu.why": "MiniMax passes the whole projection through silu(x) = x·σ(x) before it "
    "splits it into Queries, Keys and Values (act_fn on qkv_proj's output). No softmax follows "
    "to make the weights positive; silu lets positive numbers through almost unchanged and "
    "turns negative ones into small negatives (never below −0.28).",
    "stage.k_silu.title": "Lightning attention: silu of the Keys",
    "stage.k_silu.why": "The same silu(x) = x·σ(x), on the Keys.",
    "stage.v_silu.title": "Lightning attention: silu of the Values",
    "stage.v_silu.why": "The same silu(x) = x·σ(x), on the Values.",
    "stage.lightning_state.title": "Lightning attention: the state after this token",
    "stage.lightning_state.why": "The state S (d_k × d_v) is all the layer keeps of the tokens "
    "so far. Each token multiplies it by the head's fixed decay e^(−λ) and adds its own Key "
    "times its own Value, k·vᵀ: linear attention with a decay, and nothing read back (no delta "
    "rule). λ is the head's slope: MiniMax gives each head its own, smaller in later layers.",
    "stage.lightning_weights.title": "Lightning attention: the attention matrix it computes "
    "without forming it",
    "stage.lightning_weights.why": "With q and k fixed, every output row is a weighted sum of "
    "the Value rows of the tokens up to it; these are the weights (one row per query, lower "
    "triangular: the layer is causal). Each is the plain product q_t·k_s, faded by e^(−λ) once "
    "per step from s to t. Put it beside softmax attention: no exponential of the scores, no "
    "division by a row sum, so its rows need not sum to 1 and may be negative.",
    "stage.lightning_chunked.title": "Lightning attention: the blocked form",
    "stage.lightning_chunked.why": "What MiniMax runs on a whole sequence: blocks of B tokens. "
    "Within a block, ((Q·Kᵀ) ⊙ D)·V with D[i, j] = e^(−λ·(i − j)) for i ≥ j (the intra-block "
    "part); from the blocks before, the state they left, read by each Query decayed by "
    "e^(−λ·(i + 1)) (the inter-block part); then the state carried on. The same output as one "
    "step per token, with fewer, larger matrix products.",
    "stage.lightning_output.title": "Lightning attention: the output read from the state",
    "stage.lightning_output.why": "Each token reads the state it has just written with its "
    "Query: o_t = S_tᵀ·q_t. There is no scaling by 1/√d_k.",
    "stage.o_rms.title": "Lightning attention: each row's root mean square over all the heads",
    "stage.o_rms.why": "MiniMax joins the heads' outputs side by side and normalizes each row "
    "with one RMSNorm over the whole width: one root per token, shared by every head, so a "
    "head's share of the row stays as it was.",
    "stage.o_norm.title": "Lightning attention: the heads' outputs, normalized",
    "stage.o_norm.why": "Each head's output divided by its row's root (shared by all the "
    "heads), times the head's columns of the norm's learned weight.",
    "stage.lightning_gated.title": "Lightning attention: the head's output, gated",
    "stage.lightning_gated.why": "Each cell of the stage before times its gate σ(X·W_G), which "
    "the token itself decides (MiniMax: sigmoid(output_gate(x)) times the normalized output). "
    "After this, the heads are joined and out_proj (W_O) mixes them.",
    "stage.lightning_grad_state.title": "Backward: the gradient of the state, walked in reverse",
    "stage.lightning_grad_state.why": "S_t is read twice: by this token's output "
    "o_t = S_tᵀ·q_t, and by the next state S_(t+1) = e^(−λ)·S_t + k_(t+1)·v_(t+1)ᵀ. So its "
    "gradient is q_t·do_tᵀ (from the output) plus e^(−λ) times the next state's gradient: the "
    "states are walked from the last token back to the first, and what a later token's output "
    "asks of the state reaches the earlier tokens faded once per step.",
    "stage.lightning_grad_q.title": "Backward: dQ, each Query from the state it read",
    "stage.lightning_grad_q.why": "o_t = S_tᵀ·q_t, so with the state fixed the output is linear "
    "in q_t: dq_t = S_t·do_t, the state token t read, times its output's gradient.",
    "stage.lightning_grad_k.title": "Backward: dK, each Key from the state's gradient",
    "stage.lightning_grad_k.why": "Token t wrote k_t·v_tᵀ into S_t, so dk_t = dS_t·v_t: the "
    "state's gradient at t (which already holds what every later token asks of it) times the "
    "token's own Value.",
    "stage.lightning_grad_v.title": "Backward: dV, each Value from the state's gradient",
    "stage.lightning_grad_v.why": "The same write k_t·v_tᵀ seen from the Value's side: "
    "dv_t = dS_tᵀ·k_t.",
    "stage.grad_back.silu.title": "Backward through silu",
    "stage.grad_back.silu.why": "silu(x) = x·σ(x) has the derivative σ(x)·(1 + x·(1 − σ(x))): "
    "about 1 for a large positive x, about 0 for a large negative one (silu flattens there), "
    "½ at x = 0.",
    "stage.lightning_rms_share.title": "Backward: this head's share of the root's gradient",
    "stage.lightning_rms_share.why": "out_N = out / r ⊙ w, and r (one per row) is shared by "
    "every head: each head hands back its part of dr, −Σⱼ d(out_N)ⱼ·wⱼ·outⱼ / r², and the "
    "parts are added.",
    "stage.grad_o_rms.title": "Backward: the gradient of each row's root",
    "stage.grad_o_rms.why": "The root r was read by every head's normalized output, so its "
    "gradient adds every head's share (the chain rule's sum over the paths).",
    "stage.lightning_rms_back.title": "Backward through the norm over the joined heads",
    "stage.lightning_rms_back.why": "Each cell of the head's output reached the loss along two "
    "paths: divided by r and multiplied by its weight, d(out_N) ⊙ w / r; and through r itself, "
    "∂r/∂out = out / (D·r) with D the joined width, times dr. The two are added.",
    "note.lightning_grad_state": "Walked from the last token back: dS_(n+1) = 0 (no token "
    "reads the last state after its own output). Each cell: q_t[i]·do_t[j] + e^(−λ)·dS_(t+1)[i,j], "
    "with λ = {slope}: e^(−λ) ≈ {decay}.",
    "stage.grad_lightning_norm.title": "Backward: the gradient of the norm's weight",
    "stage.grad_lightning_norm.why": "out_N = out / r ⊙ w: each weight multiplied one column of "
    "the normalized output in every row, so its gradient adds, over the tokens, that column's "
    "d(out_N) times out / r.",
    "hint.lightning_grad_state": "{cell} = q_{t}[{i}]·do_{t}[{j}] + e^(−λ)·dS_{next}[{i},{j}]: "
    "this token's Query times its output's gradient, plus the next state's gradient decayed "
    "once (the last token's state has only the first term).",
    "hint.lightning_grad_q": "{cell} is row {j} of the state after token {i}, S_{i}, times row "
    "{i} of {other}: Σ_c S_{i}[{j},c]·{other}[{i},c].",
    "hint.lightning_grad_k": "{cell} is row {j} of dS_{i} times row {i} of {other}: "
    "Σ_c dS_{i}[{j},c]·{other}[{i},c].",
    "hint.lightning_grad_v": "{cell} is column {j} of dS_{i} times row {i} of {other}: "
    "Σ_c dS_{i}[c,{j}]·{other}[{i},c].",
    "stage.gdn_grad_state.title": "Backward: the gradient of the state, walked in reverse",
    "stage.gdn_grad_state.why": "S_t is read by this token's output o_t = S_tᵀ·q̂_t and by the "
    "next state, S_(t+1) = A_(t+1)·S_t + β_(t+1)·k̂_(t+1)·v_(t+1)ᵀ with A = e^g·(I − β·k̂·k̂ᵀ). So "
    "its gradient is q̂_t·do_tᵀ plus A_(t+1) times the next state's gradient (A is symmetric): "
    "walked from the last token back, each step decays it by e^g and takes out, along the next "
    "Key, the part the delta rule overwrote.",
    "stage.gdn_grad_q.title": "Backward: dQ̂, each normalized Query from the state it read",
    "stage.gdn_grad_q.why": "o_t = S_tᵀ·q̂_t, so dq̂_t = S_t·do_t: the state token t read, times "
    "its output's gradient.",
    "stage.gdn_grad_k.title": "Backward: dK̂, each normalized Key from the state's gradient",
    "stage.gdn_grad_k.why": "The Key both reads the state (m_t = S'_tᵀ·k̂_t, with S'_t = "
    "e^(g_t)·S_(t−1)) and writes along itself, so it gets two terms: β_t·dS_t·u_t from the write "
    "(u_t = v_t − m_t, what was new) and −β_t·S'_t·c_t from the read (c_t = dS_tᵀ·k̂_t).",
    "stage.gdn_grad_v.title": "Backward: dV, each Value from the state's gradient",
    "stage.gdn_grad_v.why": "Token t wrote β_t·k̂_t·v_tᵀ (minus what the state already held), so "
    "dv_t = β_t·dS_tᵀ·k̂_t = β_t·c_t.",
    "stage.gdn_grad_gates.title": "Backward: the gradients of g and β",
    "stage.gdn_grad_gates.why": "dβ_t = c_t·u_t: how much the write's strength helps, the "
    "gradient along the Key times what was new. dg_t: the decay multiplied S'_t = e^(g_t)·S_(t−1), "
    "so dg_t adds the cells of (I − β_t·k̂_t·k̂_tᵀ)·dS_t (the gradient S'_t received) times "
    "S'_t's; "
    "0 for the first token, whose S_0 = 0.",
    "stage.grad_back.l2norm.title": "Backward through the L2 norm",
    "stage.grad_back.l2norm.why": "y = s·x·ρ with ρ = 1/√(Σx² + 10⁻⁶): dx = s·(ρ·dy − x·ρ³·Σ(x ⊙ "
    "dy)). The part of dy along x itself is taken out: a normalized row cannot grow longer.",
    "note.gdn_grad_state": "Walked from the last token back: dS_(n+1) = 0. Each cell: q̂_t[i]·"
    "do_t[j] + e^(g_(t+1))·(dS_(t+1)[i,j] − β_(t+1)·k̂_(t+1)[i]·c_j), c = dS_(t+1)ᵀ·k̂_(t+1).",
    "hint.gdn_grad_state": "{cell} = q̂_{t}[{i}]·do_{t}[{j}] + e^(g_{next})·(dS_{next}[{i},{j}] − "
    "β_{next}·k̂_{next}[{i}]·c_{j}), c = dS_{next}ᵀ·k̂_{next} (the last token's state has only the "
    "first term).",
    "stage.kda_grad_state.title": "Backward: the gradient of the state, walked in reverse",
    "stage.kda_grad_state.why": "S_t is read by this token's output o_t = S_tᵀ·q̂_t and by the "
    "next state, S_(t+1) = A_(t+1)·S_t + β_(t+1)·k̂_(t+1)·v_(t+1)ᵀ with A = (I − "
    "β·k̂·k̂ᵀ)·Diag(e^g) (the decay first, then the delta rule). So its gradient is q̂_t·do_tᵀ "
    "plus Aᵀ = Diag(e^g)·(I − β·k̂·k̂ᵀ) of the next token times the next state's gradient: "
    "walked from the last token back, each step takes out, along the next Key, the part the "
    "delta rule overwrote, and decays row c by its own e^(g[c]).",
    "stage.kda_grad_gates.title": "Backward: the gradients of each channel's g and of β",
    "stage.kda_grad_gates.why": "dβ_t = c_t·u_t, as in Gated DeltaNet. dg_t[c]: the decay "
    "multiplied row c of the state, S'_t[c, :] = e^(g_t[c])·S_(t−1)[c, :], so dg_t[c] adds the "
    "cells of row c of (I − β_t·k̂_t·k̂_tᵀ)·dS_t (the gradient S'_t received) times those of "
    "row c of S'_t: one number per Key channel; 0 for the first token, whose S_0 = 0.",
    "note.kda_grad_state": "Walked from the last token back: dS_(n+1) = 0. Each cell: "
    "q̂_t[i]·do_t[j] + e^(g_(t+1)[i])·(dS_(t+1)[i,j] − β_(t+1)·k̂_(t+1)[i]·c_j), "
    "c = dS_(t+1)ᵀ·k̂_(t+1): row i decays by its own channel's e^g.",
    "hint.kda_grad_state": "{cell} = q̂_{t}[{i}]·do_{t}[{j}] + "
    "e^(g_{next}[{i}])·(dS_{next}[{i},{j}] − β_{next}·k̂_{next}[{i}]·c_{j}), "
    "c = dS_{next}ᵀ·k̂_{next} (the last token's state has only the first term).",
    "stage.gdn_grad_normed.title": "Backward through the gate to the normalized output",
    "stage.gdn_grad_normed.why": "out_Z = N ⊙ act(Z), so each cell of N receives its gradient "
    "times its own gate: dN = d(out_Z) ⊙ act(Z) (SiLU(Z) in Gated DeltaNet).",
    "stage.gdn_grad_z.title": "Backward: the gradient of the gate's input Z",
    "stage.gdn_grad_z.why": "The same product seen from the gate's side: dZ = d(out_Z) ⊙ N ⊙ "
    "act'(Z), with SiLU'(z) = σ(z)·(1 + z·(1 − σ(z))).",
    "stage.grad_back.gdn_rms.title": "Backward through the gated norm's RMSNorm",
    "stage.grad_back.gdn_rms.why": "N = out·ρ ⊙ w with ρ = 1/√(mean(out²) + ε): dout = ρ·(w ⊙ dN) "
    "− out·ρ³·mean(out ⊙ w ⊙ dN). The part of the gradient along the row itself is taken out: "
    "the norm undoes any change of the row's length.",
    "stage.grad_norm.title": "Backward: the gradient of the gated norm's weight",
    "stage.grad_norm.why": "Every head's normalized output was multiplied by the same weight w "
    "(d_v numbers), so its gradient adds, over the tokens and the heads, dN times out·ρ in "
    "that column.",
    "stage.gdn_grad_conv.title": "Backward through the causal convolution and SiLU",
    "stage.gdn_grad_conv.why": "Q_c = SiLU(u) with u = conv(Q), so first e = dQ_c ⊙ SiLU'(u), "
    "SiLU'(u) = σ(u)·(1 + u·(1 − σ(u))). Tap r carried row s of Q to row s + K − 1 − r, so row s "
    "gets back each tap's weight times e of the row it reached (the rows past the last give "
    "nothing).",
    "note.gdn_grad_conv": "Each cell: Σ_r w[r]·e[s + {taps} − 1 − r] over the {taps} "
    "{taps:tap|taps} of its column, e = d(…)_c ⊙ SiLU'(u) of the row the tap reached.",
    "stage.gdn_grad_taps.title": "Backward: the gradient of the convolution's taps",
    "stage.gdn_grad_taps.why": "Tap r of a column multiplied, at every token t, the row t − K + 1 "
    "+ r of that column, so its gradient adds, over the tokens, e_t (the gradient before SiLU) "
    "times that row. These are this head's columns of the layer's kernel (conv in the input).",
    "stage.gdn_grad_a.title": "Backward: da, through the decay",
    "stage.gdn_grad_a.why": "g = −e^(A_log)·softplus(a + dt_bias) and softplus' is σ (1 above 20, "
    "as torch's), so da = dg·(−e^(A_log))·σ(a + dt_bias).",
    "stage.gdn_grad_b.title": "Backward: db, through σ",
    "stage.gdn_grad_b.why": "β = σ(b) (times 2 in OLMo-Hybrid) and σ' = σ·(1 − σ), so db = "
    "dβ·σ(b)·(1 − σ(b)) (times that scale).",
    "stage.gdn_grad_decay.title": "Backward: the gradients of this head's A_log and dt_bias",
    "stage.gdn_grad_decay.why": "g_t = −e^(A_log)·softplus(a_t + dt_bias), so ∂g_t/∂A_log = g_t "
    "and dA_log = Σ_t dg_t·g_t; dt_bias is added to every a_t, so d(dt_bias) = Σ_t da_t.",
    "stage.grad_wa.title": "Gradient of W_a",
    "stage.grad_wa.why": "a = X·W_a (wa in the input), so dW_a = Xᵀ·da, each head's gradient in "
    "its own column.",
    "stage.grad_wb.title": "Gradient of W_b",
    "stage.grad_wb.why": "b = X·W_b (wb in the input), so dW_b = Xᵀ·db, each head's gradient in "
    "its own column.",
    "stage.kda_grad_f.title": "Backward: dF, through each channel's decay",
    "stage.kda_grad_f.why": "g[t, c] = −e^(A_log)·softplus(F[t, c] + dt_bias[c]) and softplus' is "
    "σ (1 above 20, as torch's), so dF = dg·(−e^(A_log))·σ(F + dt_bias), cell by cell; with "
    "Ling 3.0's bounded decay g = b·σ(e^(A_log)·(F + dt_bias)), dF = dg·b·e^(A_log)·σ'(…), "
    "σ' = σ·(1 − σ).",
    "stage.kda_grad_b.title": "Backward: db, through σ",
    "stage.kda_grad_b.why": "β = σ(b) and σ' = σ·(1 − σ), so db = dβ·σ(b)·(1 − σ(b)).",
    "stage.kda_grad_decay.title": "Backward: the gradients of this head's A_log and dt_bias",
    "stage.kda_grad_decay.why": "A_log (one per head) scales every channel's decay, so dA_log adds "
    "dg·∂g/∂A_log over the tokens and the channels (∂g/∂A_log = g itself, or "
    "b·σ'(…)·e^(A_log)·(F + "
    "dt_bias) for the bounded decay); dt_bias[c] is added to column c of F, so d(dt_bias)[c] adds "
    "column c of dF over the tokens.",
    "stage.grad_wfa.title": "Gradient of W_fa",
    "stage.grad_wfa.why": "F_a = X·W_fa (wf_a in the input), made once and read by every head, so "
    "dW_fa = Xᵀ·dF_a.",
    "stage.grad_wfb.title": "Gradient of W_fb",
    "stage.grad_wfb.why": "F = F_a·W_fb (wf_b in the input), so dW_fb = F_aᵀ·dF, each head's "
    "gradient in its own columns.",
    "stage.grad_wf.title": "Gradient of W_f",
    "stage.grad_wf.why": "F = X·W_f (wf in the input), so dW_f = Xᵀ·dF, each head's gradient "
    "in its "
    "own columns.",
    "stage.grad_wga.title": "Gradient of W_ga",
    "stage.grad_wga.why": "G_a = X·W_ga (wg_a in the input), made once and read by every head, so "
    "dW_ga = Xᵀ·dG_a.",
    "stage.grad_wgb.title": "Gradient of W_gb",
    "stage.grad_wgb.why": "Z = G_a·W_gb (wg_b in the input), so dW_gb = G_aᵀ·dZ, each head's "
    "gradient in its own columns.",
    "stage.grad_f_a.title": "Backward: the gradient of the low-rank F_a",
    "stage.grad_f_a.why": "Every head's F is F_a times its own columns of W_fb, so dF_a adds every "
    "head's dF·W_fbᵀ.",
    "stage.grad_g_a.title": "Backward: the gradient of the low-rank G_a",
    "stage.grad_g_a.why": "Every head's Z is G_a times its own columns of W_gb, so dG_a adds every "
    "head's dZ·W_gbᵀ.",
    "stage.grad_wz.title": "Gradient of W_z",
    "stage.grad_wz.why": "Z = X·W_Z (wz in the input), so dW_Z = Xᵀ·dZ, each head's "
    "gradient in its own columns: each weight collects, over the tokens, its input value times "
    "its gate input's gradient.",
    "note.lightning_silu": "silu(x) = x·σ(x) = x / (1 + e^(−x)), cell by cell.",
    "note.lightning_state": "S_0 = 0. Each cell: e^(−λ)·S_(t−1)[i,j] + k_t[i]·v_t[j], with λ = "
    "{slope}: e^(−λ) ≈ {decay}.",
    "note.lightning_weights": "W[t,s] = e^(−λ·(t − s))·q_t·k_s for s ≤ t, the share of token "
    "s's Value in row t: its k_s·v_sᵀ written into the state, decayed once by each later token "
    "up to t, read by q_t. On the diagonal there is no decay (t − s = 0).",
    "note.lightning_linear_in_v": "W·{v} equals this output up to rounding: the largest "
    "difference is {diff}. With q and k fixed the layer is linear in {v} (before MiniMax's norm, "
    "which is not).",
    "note.lightning_linear_in_v_far": "W·{v} differs from this output by up to {diff}: the "
    "numbers are too large for float64 to keep them equal.",
    "note.lightning_blocked_equal": "The blocked form gives the same output up to rounding: the "
    "largest difference is {diff}.",
    "note.lightning_blocked_far": "The blocked form differs from this output by up to {diff}: "
    "the numbers are too large for float64 to keep the two forms equal.",
    "note.lightning_rms": "r = √(mean of the squares of the row's {width} {width:number|numbers} "
    "+ ε), ε = {eps}: the heads' outputs side by side (MiniMaxRMSNorm over H·d_v).",
    "note.exact_stops_silu": "No exact fractions from here on: silu(x) = x / (1 + e^(−x)) is "
    "irrational for every rational x ≠ 0 (e^(−x) is then transcendental).",
    "note.exact_stops_lightning": "No exact fractions from here on: the decay e^(−λ) is "
    "irrational for every rational λ ≠ 0 (it is then transcendental).",
    "mistake.lightning_decay_missing": "These leave out the decay: the state is never "
    "multiplied by e^(−λ), so every earlier token counts as much as the newest. Each token "
    "first multiplies the state by e^(−λ), then adds k_t·v_tᵀ; W[t,s] = e^(−λ·(t − s))·q_t·k_s.",
    "mistake.lightning_decay_by_position": "These decay by the Key's position instead of its "
    "distance from the Query: e^(−λ·s) in place of e^(−λ·(t − s)). The decay counts the tokens "
    "between s and t, so a token's own Key (s = t) is not decayed at all.",
    "lightning.not_object": 'lightning must be an object such as {{"slope": [...]}}, not {value}.',
    "lightning.unknown_key": "lightning has no key {key}; its keys are {known}",
    "lightning.needs": "lightning needs slope: each head's decay rate λ (the state is "
    "multiplied by e^(−λ) at each token), one number per head.",
    "lightning.length": "lightning's {field} is {shape}, but it needs {length} "
    "{length:number|numbers} (slope: one per head; norm: one per column of the heads side by "
    "side, H·d_v).",
    "lightning.slope": "lightning's slope must be numbers of at least 0 (the decay e^(−λ) is at "
    "most 1), not {value}.",
    "lightning.block": "lightning's block (the blocked form's block size) must be a whole number "
    "of at least 1, not {value}.",
    "lightning.act": 'lightning\'s act is "silu" or left out (no activation), not {value}.',
    "lightning.norm_eps": "lightning's norm_eps must be a number above 0, not {value}.",
    "lightning.gate_needs_x": "lightning's gate multiplies by σ(X·W_G), so it needs x and the "
    "weights, not q, k and v given directly.",
    "lightning.gate_shape": "lightning's gate is {shape}, but it needs {want} (d_model × H·d_v "
    'in the layout "{layout}").',
    "lightning.mask": "A lightning-attention layer is causal by its nature (each token reads "
    'the state written by the tokens up to it): give mask "causal" (the mask here is {mask}: a '
    'problem without a "mask" key has none).',
    "lightning.cross": "A lightning-attention layer reads its own tokens: Q has {n} {n:row|rows} "
    "but K and V have {m}; they need the same rows.",
    "lightning.kv_heads": "A lightning-attention problem needs as many K/V heads as heads (here "
    "heads = {heads}, kv_heads = {kv_heads}): leave out kv_heads.",
    "lightning.scale": "A lightning-attention layer does not scale its Queries (there are no "
    "scores to scale): leave out scale.",
    "lightning.alone": "A lightning-attention layer (lightning) has no scores and no softmax, so "
    "the other features of attention do not apply to it: leave them out.",
    "lightning.decode": "A lightning-attention layer (lightning) already runs token by token "
    "through its state: leave out --decode.",
    "lightning.tiles": "A lightning-attention layer (lightning) has no softmax to compute in "
    "tiles: leave out --tiles.",
    # the layer around the core (qkvcalc/ops/gdn_layer.py)
    "ui.variant.gdn_conv": "Q, K and V through the layer's causal convolution ({taps} "
    "{taps:tap|taps}) and SiLU",
    "ui.variant.gdn_gates": "g and β made from X (W_a, W_b, A_log, dt_bias)",
    "ui.variant.gdn_norm": "the gated RMSNorm after the core: out / RMS(out) ⊙ w ⊙ SiLU(X·W_z)",
    "stage.gdn_conv.title": "Gated DeltaNet: the causal convolution, then SiLU",
    "stage.gdn_conv.why": "Before the delta rule, each column of Q, K and V is mixed with the "
    "same column of the few tokens just before it: a depthwise convolution (one kernel per "
    "column, conv1d with groups = channels), causal, so no token sees a later one. SiLU(x) = "
    "x·σ(x) follows. A token's Query, Key and Value thus already carry a little of their "
    "neighbours before the state is read or written.",
    "stage.gdn_a.title": "Gated DeltaNet: a, this head's number per token for the decay",
    "stage.gdn_a.why": "One more column of X's projection, this head's column of W_a: it decides "
    "how fast the state forgets at this token.",
    "stage.gdn_b.title": "Gated DeltaNet: b, this head's number per token for β",
    "stage.gdn_b.why": "One more column of X's projection, this head's column of W_b: it decides "
    "how strongly the token writes.",
    "stage.gdn_gates.title": "Gated DeltaNet: the decay g and the write strength β, made from a "
    "and b",
    "stage.gdn_gates.why": "g = −e^(A_log)·softplus(a + dt_bias) is below 0, so the decay e^g "
    "lies in (0, 1): the state is multiplied by it before the token writes. β = σ(b) lies in "
    "(0, 1): how much of the correction the token writes.",
    "stage.z.title": "Gated DeltaNet: Z, the output gate's input",
    "stage.z.why": "One more projection of X, d_v columns for this head: SiLU(Z) multiplies the "
    "normed output below, cell by cell.",
    "stage.gdn_normed.title": "Gated DeltaNet: the output over its root mean square, times w",
    "stage.gdn_normed.why": "Each token's row of the core output divided by its root mean "
    "square (√(mean(out²) + ε)), then multiplied by the norm's weight w, column by column "
    "(Qwen3NextRMSNormGated: w as it is stored, not 1 + w).",
    "stage.gdn_gated.title": "Gated DeltaNet: the normed output times SiLU(Z)",
    "stage.gdn_gated.why": "The gate: each cell times SiLU(Z) = Z·σ(Z), which the token decides "
    "from X. The heads are then joined and out_proj (W_O) mixes them.",
    "stage.gdn_output_normed.title": "Gated DeltaNet: the output read from the state",
    "stage.gdn_output_normed.why": "Each token reads the state it has just written with its "
    "Query: o_t = S_tᵀ·q̂_t. This core output then goes through the gated RMSNorm below "
    "(times SiLU(Z)) before the heads are joined.",
    "note.gdn_conv": "Each cell: SiLU(Σ_r w[r]·x[t − {back} + r]) over the {taps} {taps:tap|taps} "
    "of its column; the rows before the first token are 0.",
    "note.gdn_gates": "This head's A_log is {a_log}, so e^(A_log) = {decay}.",
    "note.gdn_beta_scale": "Here β = {scale}·σ(b) lies in (0, {scale}) (OLMo-Hybrid's "
    "allow_neg_eigval): with β above 1 a token writes past the correction, and I − β·k̂·k̂ᵀ "
    "turns the state's component along k̂ to the other sign.",
    "note.gdn_norm_weight": "RMS(out) = √(mean of the row's squares + ε), one number per token "
    "for the whole row.",
    "gated_delta.both_gates": "gated_delta gives g or beta and also {made}: give either g and "
    "beta, or wa, wb, a_log and dt_bias (from which the layer makes them), not both.",
    "gated_delta.made_needs": "gated_delta makes g and β from X only with all of wa, wb, a_log "
    "and dt_bias; missing: {missing}.",
    "gated_delta.needs_x": "gated_delta's {field} multiplies X: give x and the weights (not q, k "
    "and v directly).",
    "gated_delta.conv": "gated_delta's conv is {shape}, but it needs one row per tap and one "
    "column per channel of q, k and v: K × (2·H·d_k + H·d_v) = K × {channels} (H = {heads}, d_k "
    "= {d_k}, d_v = {d_v}).",
    "gated_delta.weight_shape": "gated_delta's {field} is {shape}, but it needs {want} (in the "
    "{layout} layout, as W_Q).",
    "gated_delta.vector": "gated_delta's {field} has {length} {length:number|numbers}, but it "
    "needs {want}: one per head (a_log, dt_bias) or one per column of a head's output (norm).",
    "gated_delta.norm_pair": "gated_delta's gated norm needs wz (the gate's weight) and norm (its "
    "weight w) together, norm_eps only with them; {given} came alone.",
    "gated_delta.beta_scale": "gated_delta's beta_scale multiplies the β made from X (β = "
    "beta_scale·σ(b); OLMo-Hybrid's is 2): give it with wa, wb, a_log and dt_bias, as a number "
    "above 0 and at most 2 (beyond 2, I − β·k̂·k̂ᵀ would grow the state); here it is {value}.",
    "gated_delta.norm_eps": "gated_delta's norm_eps (the gated norm's ε) must be a number between "
    "0 and 1, not {value}.",
    # ---- differential attention (qkvcalc/ops/differential.py) ----
    "ui.variant.differential": "differential attention in pairs of heads, λ = {lam}, "
    "λ_init = {init}",
    "stage.diff_weights.title": "Differential attention: one map minus λ times the other",
    "stage.diff_weights.why": "The heads work in pairs: head i and head i + H/2 look at the same "
    "tokens with their own queries and keys, and the second map, times λ, is taken away from the "
    "first. Attention that both maps give to the same keys (the noise a softmax cannot put to "
    "zero) cancels as far as λ times the second map's weight matches the first's; what only the "
    "first map sees remains. Each map's row sums to 1, so a row of Δ sums to 1 − λ (0 where every "
    "key is masked), and with λ > 0 a cell of Δ can be negative.",
    "stage.diff_v.title": "Differential attention: the pair's values side by side",
    "stage.diff_v.why": "The pair reads both heads' values at once, as one matrix twice as wide: "
    "so its output has 2·d_v columns, and the H/2 pairs together are as wide as the H heads "
    "were. W_O keeps its shape.",
    "stage.diff_output.title": "Differential attention: the difference applied to the values",
    "stage.diff_output.why": "The same weighted sum as a head's output, with the difference of "
    "the maps as the weights: D = Δ·V''. Each head's own output A·V above is not used after "
    "this: the pair's output takes its place.",
    "stage.diff_norm.title": "Differential attention: the group norm",
    "stage.diff_norm.why": "Each row of the pair's output is divided by its root mean square (an "
    "RMSNorm without a weight, over the pair's 2·d_v columns). Taking one map away from the other "
    "can leave a row of D large for one token and small for the next (where the two maps nearly "
    "cancel), so the norm brings every row to a root mean square just under 1 (unless the row is "
    "tiny next to ε: a row of zeros stays 0).",
    "stage.diff_scaled.title": "Differential attention: scaled by 1 − λ_init",
    "stage.diff_scaled.why": "The normalised rows are multiplied by 1 − λ_init, the same number "
    "for every cell. Ye et al. use this fixed factor to keep the gradient that flows back through "
    "a pair about as large as through a plain Transformer's attention. The concatenation reads "
    "these outputs, one per pair.",
    "note.diff_pair": "Head {i} pairs with head {j}: Δ = A_{i} − {lam} × A_{j}.",
    "note.diff_v": "Head {i}'s values: column(s) {first}. Head {j}'s values: column(s) {second}.",
    "note.diff_norm": "Row by row: x / √(mean(x²) + ε) over the {width} {width:column|columns}, "
    "with ε = {eps}.",
    "note.diff_scaled": "λ_init = {init}, so every cell is multiplied by 1 − λ_init = {factor}.",
    "hint.diff_weights": "{cell} = A_{head}[{i},{j}] − λ × A_{partner}[{i},{j}], head {head}'s "
    "weight minus λ times head {partner}'s.",
    "hint.diff_v": "{cell} is a cell of head {head}'s values (the first d_v columns) or of head "
    "{partner}'s (the rest).",
    "hint.diff_norm": "{cell} = D[{i},{j}] / √(mean of the squares of row {i} of D + ε).",
    "hint.diff_scaled": "{cell} = (1 − λ_init) × N[{i},{j}].",
    "mistake.diff_lambda_missing": "This is one map minus the other with λ left out: the second "
    "map is multiplied by λ before it is taken away.",
    "mistake.diff_added": "This adds λ times the second map: differential attention takes it away.",
    "stage.grad_back.diff_scale.title": "Backward through a scaling by a constant",
    "stage.grad_back.diff_scale.why": "Every cell was multiplied by the same number, so every "
    "cell's gradient is multiplied by it too.",
    "stage.grad_back.group_rms.title": "Backward through the group norm",
    "stage.grad_back.group_rms.why": "The norm multiplied each row by ρ = 1/√(mean(x²) + ε). Its "
    "backward has two parts: the gradient scaled the same way, ρ·g, minus the part that would "
    "only change the row's length, which the norm undoes.",
    "stage.grad_diff_v.title": "Backward: gradient of the pair's values",
    "stage.grad_diff_v.why": "D = Δ·V'', so dV'' = Δᵀ·dD, as for a head's values: each value row "
    "collects the output gradients of the queries that read it, weighted by Δ (a negative weight "
    "pushes it the other way).",
    "stage.grad_diff_weights.title": "Backward: gradient of the difference of the maps",
    "stage.grad_diff_weights.why": "D = Δ·V'', so dΔ = dD·V''ᵀ: the dot product of output row i's "
    "gradient with value row j.",
    "stage.grad_weights.diff_first.title": "Backward: gradient of the first map",
    "stage.grad_weights.diff_first.why": "Δ = A_first − λ·A_second, so the first map's gradient is "
    "dΔ itself.",
    "stage.grad_weights.diff_second.title": "Backward: gradient of the second map",
    "stage.grad_weights.diff_second.why": "Δ = A_first − λ·A_second, so the second map's gradient "
    "is −λ·dΔ: with λ > 0, raising its weight lowers Δ.",
    "stage.grad_v.diff.title": "Backward: a head's part of the pair's values",
    "stage.grad_v.diff.why": "V'' set the two heads' values side by side, so each head's V gets "
    "its own columns of dV'' back.",
    "differential.not_object": "differential must be an object such as "
    '{{"lambda": 0.5, "lambda_init": 0.2}}, not {value}',
    "differential.unknown_key": "differential has no key {key}; its keys are {known}",
    "differential.needs_both": "differential needs both lambda (λ) and lambda_init (λ_init).",
    "differential.heads_odd": "Differential attention pairs head i with head i + H/2, so it needs "
    "an even number of heads, but heads is {heads}.",
    "differential.with_gate": "Differential attention joins each pair of heads after their "
    "outputs, where the output gate (wg) would multiply each head's output, and qkvcalc does "
    "not compute the two together (DiffLlama has no output gate): leave out wg and bg, or "
    "differential.",
    "differential.decode": "Differential attention is not computed step by step with a KV cache: "
    "leave out --decode (the whole run shows it).",
    "differential.train": "train does not learn through differential attention yet: leave out "
    "differential to train, or see its gradients with explain --backward.",
    "differential.tiles": "Differential attention subtracts whole maps of weights, which a run in "
    "tiles never holds: leave out --tiles.",
    "stage.concat.pairs.title": "Concatenate the pairs",
    "stage.concat.pairs.why": "The pairs' scaled outputs are laid side by side, pair 1's columns "
    "first: H/2 pairs of 2·d_v columns, one row per token, H·d_v wide.",
    "note.concat_columns_pairs": "Columns of the joined result, by pair: {spans}.",
    "ui.concat_span_pair": "pair {head} → {cols}",
    "hint.concat_pairs": "{cell} is row {i}, column {c} of pair {h}'s scaled output: the pairs "
    "are laid side by side.",
    "stage.grad_output.pair.title": "Backward: this pair's share of the gradient",
    "stage.grad_output.pair.why": "Each pair wrote its own columns of the concatenation, so each "
    "pair receives exactly those columns of d(concat) back, and nothing of the others'.",
    "stage.output.final_pairs.title": "Output projection",
    "stage.output.final_pairs.why": "W_O lets every output feature combine all the columns of the "
    "joined pairs: concat·W_O = Σ_i pair_i·W_O[rows of pair i], so with two pairs or more, what "
    "one pair found is mixed with what the others found. W_O also sets the width, usually back to "
    "d_model, so the result can be added to the layer's input (the residual connection).",
    "stage.output.concat_pairs.title": "Output (the joined pairs)",
    "stage.output.concat_pairs.why": "With no W_O given, the joined pairs are the output.",
    "ui.variant.chunk": "chunks of {chunk}",
    "ui.variant.window": "sliding window {window}",
    "ui.variant.bottom_right": "causal mask aligned bottom-right",
    "ui.variant.positions": "positions given",
    "ui.mask_none": "none",
    "ui.mask_causal": "causal",
    "ui.mask_custom": "0/1 matrix",
    "ui.mask_padding": "{mask} + key_padding",
    "ui.preset_reference": "Where the numbers come from: {reference}",
    "ui.worksheet": "Worksheet: the inputs are filled in; work out every blank cell. The answer "
    "key is the same command without --worksheet.",
    "ui.preset": "preset {name}: {description}",
    "ui.preset_bare": "preset {name}",
    "ui.edited_from": "edited from preset {name} (its numbers or options are no longer the "
    "preset's, so its description and reference are left out)",
    "ui.named": "{name}: {description}",
    "ui.named_bare": "{name}",
    "ui.presets_title": "Presets",
    "ui.presets_name": "name",
    "ui.presets_description": "description",
    "ui.presets_hint": "Run one: qkvcalc explain --preset NAME · edit one: "
    "qkvcalc presets show NAME > mine.json",
    "ui.split_row": "head {head}: {q}[:, {qcols}], {k}[:, {kcols}], {v}[:, {vcols}] (K/V head {g})",
    # ---- Kimi Delta Attention, a linear-attention layer (qkvcalc/ops/kimi_delta.py) ----
    "ui.variant.kimi_delta": "a linear-attention layer: Kimi Delta Attention (Kimi Linear), one "
    "decay per Key channel, its chunked form in chunks of {chunk}",
    "stage.kda_q_l2.title": "Kimi Delta Attention: the Queries, L2-normalized and scaled",
    "stage.kda_q_l2.why": "The layer divides each Query row by its length (√(Σx² + 10⁻⁶), so a "
    "row of zeros stays zeros), then by √d_k (times the problem's scale instead, when one is "
    "given), as transformers' recurrent_kimi_delta_attention "
    "does with use_qk_l2norm_in_kernel. Every Query then reads the state with the same strength, "
    "whatever the size of its projection.",
    "stage.kda_k_l2.title": "Kimi Delta Attention: the Keys, L2-normalized",
    "stage.kda_k_l2.why": "Each Key row divided by its length: the delta rule below writes "
    "β·(v − S'ᵀk̂) along k̂, and with |k̂| = 1 a β of 1 replaces exactly what the state held for "
    "that Key.",
    "stage.kda_gates.title": "Kimi Delta Attention: the decays g (one per Key channel) and the "
    "write strength β of each token",
    "stage.kda_gates.why": "Given per token and per head: d_k numbers g_1 … g_d_k and one β. "
    "Each g is a decay in log space: row c of the state (Key channel c) is multiplied by e^(g_c) "
    "before the token writes, so each channel forgets at its own rate (Gated DeltaNet has one g "
    "for all of them). Kimi Linear computes g = −e^(A_log)·softplus(f_b(f_a(x)) + dt_bias), so "
    "each e^g lies in (0, 1), and β = σ(b).",
    "stage.kda_state.title": "Kimi Delta Attention: the state after this token",
    "stage.kda_state.why": "The state S (d_k × d_v) is all the layer keeps of the tokens so far, "
    "however many there were. Each token decays it row by row (S' = Diag(e^g)·S: row c times "
    "e^(g_c)), reads what it already holds for its Key (m = S'ᵀ·k̂), and writes the difference "
    "from its own Value along its Key: S = S' + k̂·(β·(v − m))ᵀ. That is the delta rule: it "
    "corrects the memory instead of adding to it.",
    "stage.kda_weights.title": "Kimi Delta Attention: the attention matrix it computes without "
    "forming it",
    "stage.kda_weights.why": "With q, k, g and β fixed, every output row is a weighted sum of "
    "the Value rows of the tokens up to it; these are the weights (one row per query, lower "
    "triangular: the layer is causal). The layer never forms this n×n matrix, only the d_k × d_v "
    "state. Its rows need not sum to 1 and may be negative; a token's weight fades by the decays "
    "of the channels its Key and the Query share, and by every later write along a similar Key.",
    "stage.kda_chunked.title": "Kimi Delta Attention: the chunked form",
    "stage.kda_chunked.why": "What the layer runs on a whole sequence "
    "(chunk_kimi_delta_attention): within a chunk, the delta rule's updates solved at once from "
    "one unit lower-triangular system whose entries decay channel by channel, the state carried "
    "from chunk to chunk. Fewer, larger matrix products than one step per token; the same output.",
    "stage.kda_output.title": "Kimi Delta Attention: the output read from the state",
    "stage.kda_output.why": "Each token reads the state it has just written with its Query: o_t "
    "= S_tᵀ·q̂_t. In Kimi Linear this core output then goes through a gated RMSNorm (o_norm, times "
    "σ of the low-rank gate g_b(g_a(x))) and o_proj, which are not shown here.",
    "note.kda_l2norm": "l2norm(x) = x / √(Σx² + 10⁻⁶), row by row: Kimi Linear's l2norm with eps "
    "= 1e-6, a division by the root as FLA's kernel writes it.",
    "note.kda_state": "S_0 = 0. Each cell: e^(g_t[i])·S_{{t−1}}[i,j] + k̂_t[i]·β_t·(v_t[j] − "
    "m_t[j]), where m_t[j] = Σ_r e^(g_t[r])·S_{{t−1}}[r,j]·k̂_t[r], what the decayed state holds "
    "for this Key in column j. Row i decays by its own channel's g_t[i].",
    "note.kda_weights": "W[t,s] = β_s·k̂_sᵀ·A_(s+1)⋯A_t·q̂_t with A_r = Diag(e^(g_r))·(I − "
    "β_r·k̂_r·k̂_rᵀ): token s's write, carried through every later step up to t, read by q̂_t.",
    "note.kda_weights_work": "Each cell's arithmetic walks its row from the diagonal to the "
    "left: W[t,s] = β_s·(⟨k̂_s, q̂_t⟩ over s+1…t − Σ_(r = s+1…t) W[t,r]·⟨k̂_s, k̂_r⟩ over "
    "s+1…r), where ⟨a, b⟩ over a span of tokens = Σ_c e^(g_c summed over the span)·a[c]·b[c], "
    "the dot product with each channel decayed by its own g (on the diagonal the span is empty: "
    "a plain dot product). Each line is β_s × (the decayed ⟨k̂_s, q̂_t⟩ − W[t,r] × the decayed "
    "⟨k̂_s, k̂_r⟩ for each later r), on the diagonal β_t × k̂_t·q̂_t: the dot products are worked "
    "out from Q̂, K̂ and g above, the weights W[t,r] are the cells to the right in the same row.",
    "note.kda_linear_in_v": "W·V equals this output up to rounding: the largest difference is "
    "{diff}. With q, k, g and β fixed the layer is linear in V (before Kimi Linear's gated norm, "
    "which is not).",
    "note.kda_linear_in_v_far": "W·V differs from this output by up to {diff}: the numbers are "
    "too large for float64 to keep them equal.",
    "note.kda_chunked_equal": "The chunked form gives the same output up to rounding: the "
    "largest difference is {diff}.",
    "note.kda_chunked_far": "The chunked form differs from this output by up to {diff}: the "
    "decays are too extreme for float64 to keep the two forms equal.",
    "mistake.kda_decay_scalar": "These decay the state by one number per token, e^(the mean of "
    "g_t over the channels), for every row, as Gated DeltaNet's one decay per head. Kimi Delta "
    "Attention decays each row c of the state by its own channel's e^(g_t[c]): S' = "
    "Diag(e^(g_t))·S_(t−1).",
    "kimi_delta.not_object": 'kimi_delta must be an object such as {{"g": [...], "beta": '
    "[...]}}, not {value}.",
    "kimi_delta.unknown_key": "kimi_delta has no key {key}; its keys are {known}",
    "kimi_delta.needs": "kimi_delta needs both g (each token's decays in log space, one per Key "
    "channel) and beta (β, its write strength, one per token and head), or wf_a and wf_b (or wf "
    "alone), a_log, dt_bias and wb, from which the layer makes them.",
    "kimi_delta.g_shape": "kimi_delta's g is {shape}, but it needs one decay per token, head and "
    "Key channel: n×H×d_k = {n}×{heads}×{d_k}, or n×(H·d_k) = {n}×{width} with head 1's "
    "channels first.",
    "kimi_delta.g_token": "kimi_delta's g gives token {token} a {shape} matrix, but each token "
    "needs one row per head and one column per Key channel: H×d_k = {heads}×{d_k}.",
    "kimi_delta.beta_shape": "kimi_delta's beta is {shape}, but it needs one row per token and "
    "one column per head: n×H = {n}×{heads}.",
    "kimi_delta.beta_flat": "kimi_delta's beta is a flat list of {count} {count:number|numbers}, "
    "but it needs one number per token and head: n×H = {n}×{heads} (a flat list of n numbers only "
    "with one head).",
    "kimi_delta.g_flat": "kimi_delta's g is a flat list of {count} {count:number|numbers}, but it "
    "needs one decay per token, head and Key channel: n×H×d_k = {n}×{heads}×{d_k}, or n×(H·d_k) = "
    "{n}×{width} with head 1's channels first (a flat list of n numbers only with one head and "
    "d_k = 1).",
    "kimi_delta.g_positive": "kimi_delta's g is above 0 at token {token}, head {head}, channel "
    "{channel}: g is a decay in log space, and the state's row is multiplied by e^g ≤ 1 (Kimi "
    "Linear makes g = −e^(A_log)·softplus(f_b(f_a(x)) + dt_bias) < 0).",
    "kimi_delta.mask": "A Kimi Delta Attention layer is causal by its nature (each token reads "
    'the state written by the tokens up to it): give mask "causal" (the mask here is {mask}: a '
    'problem without a "mask" key has none).',
    "kimi_delta.cross": "A Kimi Delta Attention layer reads its own tokens: Q has {n} "
    "{n:row|rows} but K and V have {m}; they need the same rows.",
    "kimi_delta.kv_heads": "A Kimi Delta Attention problem needs as many K/V heads as heads "
    "(here heads = {heads}, kv_heads = {kv_heads}): leave out kv_heads.",
    "kimi_delta.chunk": "kimi_delta's chunk (the chunked form's chunk size) must be a whole "
    "number of at least 1, not {value}.",
    "kimi_delta.alone": "A Kimi Delta Attention layer (kimi_delta) has no scores and no softmax, "
    "so the other features of attention do not apply to it: leave out {others}.",
    "kimi_delta.decode": "A Kimi Delta Attention layer (kimi_delta) already runs token by token "
    "through its state: leave out --decode.",
    "kimi_delta.tiles": "A Kimi Delta Attention layer (kimi_delta) has no softmax to compute in "
    "tiles: leave out --tiles.",
    # the layer around the core (qkvcalc/ops/kda_layer.py; the convolution and the gated norm
    # are gdn_layer.py's)
    "ui.variant.kda_gates": "each channel's g and β made from X (W_fa, W_fb, A_log, dt_bias, W_b)",
    "ui.variant.kda_norm": "the gated RMSNorm after the core: out / RMS(out) ⊙ w ⊙ σ(X·W_ga·W_gb)",
    "ui.variant.kda_gates_whole": "each channel's g and β made from X (W_f, A_log, dt_bias, W_b)",
    "ui.variant.kda_bounded": "the bounded decay: g = {bound}·σ(e^(A_log)·(F + dt_bias)), in "
    "({bound}, 0)",
    "ui.variant.kda_norm_whole": "the gated RMSNorm after the core: out / RMS(out) ⊙ w ⊙ σ(X·W_z)",
    "stage.kda_conv.title": "Kimi Delta Attention: the causal convolution, then SiLU",
    "stage.kda_conv.why": "Before the delta rule, each column of Q, K and V is mixed with the "
    "same column of the few tokens just before it: a depthwise convolution (one kernel per "
    "column, conv1d with groups = channels), causal, so no token sees a later one. SiLU(x) = "
    "x·σ(x) follows (Kimi Linear's short convolution, the same as Gated DeltaNet's).",
    "stage.kda_f_a.title": "Kimi Delta Attention: F_a, the decay's low-rank projection of X",
    "stage.kda_f_a.why": "The decays are made in two steps (f_a_proj, then f_b_proj): X first goes "
    "down to r numbers per token, which every head shares. Two thin matrices hold fewer numbers "
    "than one d_model × H·d_k.",
    "stage.kda_f.title": "Kimi Delta Attention: F, this head's d_k numbers per token before the "
    "decay",
    "stage.kda_f.why": "The low-rank F_a times this head's d_k columns of W_fb (f_b_proj): one "
    "number per Key channel, from which each channel's decay is made.",
    "stage.kda_f_whole.title": "Kimi Delta Attention: F, this head's d_k numbers per token "
    "before the decay",
    "stage.kda_f_whole.why": "X times this head's d_k columns of W_f (f_proj, one d_model × H·d_k "
    "matrix, not two low-rank ones): one number per Key channel, from which each channel's decay "
    "is made.",
    "stage.kda_b.title": "Kimi Delta Attention: b, this head's number per token for β",
    "stage.kda_b.why": "One more column of X's projection (b_proj), one per head: how strongly "
    "the token writes, before σ.",
    "stage.kda_gates_made.title": "Kimi Delta Attention: the decays g (one per Key channel) and "
    "the write strength β, made from F and b",
    "stage.kda_gates_made.why": "g_c = −e^(A_log)·softplus(F_c + dt_bias_c) is below 0, so each "
    "channel's decay e^(g_c) lies in (0, 1): row c of the state is multiplied by it before the "
    "token writes, each channel at its own rate (A_log is one number per head, dt_bias one per "
    "channel). β = σ(b) lies in (0, 1): how much of the correction the token writes.",
    "stage.kda_gates_bounded.title": "Kimi Delta Attention: the decays g (one per Key channel) "
    "and the write strength β, made from F and b",
    "stage.kda_gates_bounded.why": "g_c = b·σ(e^(A_log)·(F_c + dt_bias_c)) with the bound b below "
    "0: σ lies in (0, 1), so g_c lies in (b, 0) and each channel's decay e^(g_c) in (e^b, 1). No "
    "token can erase a channel in one step, as the unbounded −e^(A_log)·softplus(…) could (A_log "
    "is one number per head, dt_bias one per channel). β = σ(b) lies in (0, 1): how much of the "
    "correction the token writes.",
    "stage.kda_g_a.title": "Kimi Delta Attention: G_a, the output gate's low-rank projection of X",
    "stage.kda_g_a.why": "The output gate is made in two steps too (g_a_proj, then g_b_proj): X "
    "goes down to r numbers per token, which every head shares.",
    "stage.kda_z.title": "Kimi Delta Attention: Z, the output gate's input",
    "stage.kda_z.why": "The low-rank G_a times this head's d_v columns of W_gb (g_b_proj): σ(Z) "
    "multiplies the normed output below, cell by cell.",
    "stage.kda_z_whole.title": "Kimi Delta Attention: Z, the output gate's input",
    "stage.kda_z_whole.why": "X times this head's d_v columns of W_z (g_proj, one d_model × H·d_v "
    "matrix, not two low-rank ones): σ(Z) multiplies the normed output below, cell by cell.",
    "stage.kda_normed.title": "Kimi Delta Attention: the output over its root mean square, times w",
    "stage.kda_normed.why": "Each token's row of the core output divided by its root mean "
    "square (√(mean(out²) + ε)), then multiplied by the norm's weight w, column by column "
    "(KimiLinearRMSNormGated: w as it is stored, not 1 + w).",
    "stage.kda_gated.title": "Kimi Delta Attention: the normed output times σ(Z)",
    "stage.kda_gated.why": "The gate: each cell times σ(Z), which the token decides from X "
    "(Kimi Linear's gate is the sigmoid; Gated DeltaNet's is SiLU). The heads are then joined "
    "and o_proj (W_O) mixes them.",
    "stage.kda_output_normed.title": "Kimi Delta Attention: the output read from the state",
    "stage.kda_output_normed.why": "Each token reads the state it has just written with its "
    "Query: o_t = S_tᵀ·q̂_t. This core output then goes through the gated RMSNorm below "
    "(times σ(Z)) before the heads are joined.",
    "note.kda_gates_made": "This head's A_log is {a_log}, so e^(A_log) = {decay}.",
    "note.kda_gates_bounded": "This head's A_log is {a_log}, so e^(A_log) = {decay}; the bound is "
    "b = {bound}.",
    "kimi_delta.both_gates": "kimi_delta gives g or beta and also {made}: give either g and "
    "beta, or wf_a and wf_b (or wf alone), a_log, dt_bias and wb (from which the layer makes "
    "them), not both.",
    "kimi_delta.made_needs": "kimi_delta makes g and β from X only with wf_a and wf_b (or wf "
    "alone), a_log, dt_bias and wb all given; lower_bound only with them; missing: {missing}.",
    "kimi_delta.both_forms": "kimi_delta gives {whole} and also {parts}: give the projection "
    "either in one ({whole}) or as its two low-rank factors ({parts}), not both.",
    "kimi_delta.lower_bound": "kimi_delta's lower_bound (the bounded decay's b in g = "
    "b·σ(e^(A_log)·(F + dt_bias))) must be a number below 0, not {value}.",
    "precision.kda_bounded": "--dtype rounds a bounded decay (lower_bound) as Ling 3.0's model "
    "computes it, whose forget gate has its projection in one (wf); with wf_a and wf_b no model "
    "qkvcalc reads makes a bounded decay, so there is no model's rounding to follow. Give the "
    "projection in one (wf), or leave out --dtype.",
    "kimi_delta.needs_x": "kimi_delta's {field} multiplies X: give x and the weights (not q, k "
    "and v directly).",
    "kimi_delta.conv": "kimi_delta's conv is {shape}, but it needs one row per tap and one "
    "column per channel of q, k and v: K × (2·H·d_k + H·d_v) = K × {channels} (H = {heads}, d_k "
    "= {d_k}, d_v = {d_v}).",
    "kimi_delta.weight_shape": "kimi_delta's {field} is {shape}, but it needs {want} (in the "
    "{layout} layout, as W_Q; wf_b's and wg_b's rows are the columns of wf_a and wg_a).",
    "kimi_delta.vector": "kimi_delta's {field} has {length} {length:number|numbers}, but it needs "
    "{want}: one per head (a_log), one per Key channel of each head (dt_bias: H·d_k) or one per "
    "column of a head's output (norm).",
    "kimi_delta.norm_needs": "kimi_delta's gated norm needs wg_a and wg_b (the gate's two "
    "weights; or wz, the gate's weight in one) and norm (its weight w) together, norm_eps only "
    "with them; given: {given}; missing: {missing}.",
    "kimi_delta.norm_eps": "kimi_delta's norm_eps (the gated norm's ε) must be a number between "
    "0 and 1, not {value}.",
    # ---- the bundled presets: descriptions (i18n.preset_description) and references -----
    "preset.alibi.description": "ALiBi on 'I love my cats': two heads penalise distant keys, "
    "one steeply (slope 1/2), one gently (1/4)",
    "preset.llama.description": "A tiny LLaMA-style layer: 2 query heads share 1 key/value "
    "head, RoPE on q and k, causal, then W_O",
    "preset.rope.description": "RoPE on 'cat sat cat sat': the same pair of tokens at the same "
    "distance scores the same, wherever it stands",
    "preset.tiles.description": "FlashAttention's online softmax on five tokens, two keys a "
    "block: the running maximum grows in block 2, so the sum and output so far are rescaled by "
    "e^(m_old − m_new)",
    "preset.decode.description": "Decoding 'the cat sat down' with a KV cache: a prefill of two "
    "tokens, then one token a step, each attending to every cached key",
    "preset.window.description": "A sliding window of 3 on five tokens: each query sees itself "
    "and the two before it, as Mistral's layers do",
    "preset.cross.description": "Cross-attention: the French 'le chat dort' reads the English "
    "'the cat is sleeping'",
    "preset.doc.description": "One token, x = [1, 2]: the worked example of Q, K, V by hand",
    "preset.dk64.description": "A realistic width, d_k = 64: random queries and keys, where "
    "dividing by √64 = 8 turns weights piled on one key into spread ones",
    "preset.diff.description": "Differential attention: 2 heads as one pair, (A_1 − λ·A_2)·[V_1 | "
    "V_2], its rows RMS-normalised and scaled by 1 − λ_init (d_k = 1, causal)",
    "preset.diff.reference": "Made for qkvcalc, after Ye et al. 2024, 'Differential Transformer' "
    "(DiffLlama in transformers): head 1 pairs with head 2, and the second map is subtracted from "
    "the first with weight λ = 1/2, so the attention both maps give to the same keys is partly "
    "taken away (token I: both maps give all their weight to I, and Δ = 1 − ½·1 = ½); the result "
    "reads both heads' values side by side, each row is divided by its root mean square, and "
    "multiplied by 1 − λ_init = 4/5.",
    "preset.deltanet.description": "Gated DeltaNet (Qwen3-Next): a 2×2 state decayed by e^g and "
    "corrected by the delta rule token by token, beside the 3×3 matrix it computes without "
    "forming it",
    "preset.deltanet.reference": "Made for qkvcalc, after Yang et al. 2024, 'Gated Delta "
    "Networks' and transformers' torch_recurrent_gated_delta_rule: q and k are L2-normalized (q "
    "also divided by √d_k); each token multiplies the state by e^g, reads what it holds for its "
    "key, and writes β times the difference from its value along its key. The chunked form "
    "(chunks of 2) gives the same output.",
    "preset.dsa.description": "DeepSeek sparse attention (DeepSeek-V3.2): an indexer of 2 heads "
    "scores every key with ReLU, and each of 5 tokens attends only to its top 2 keys, inside "
    "multi-head latent attention",
    "preset.dsa.reference": "Made for qkvcalc, after DeepSeek-AI 2025, 'DeepSeek-V3.2: Pushing "
    "the Frontier of Open Large Language Models' and transformers' DeepseekV32Indexer: the "
    "indexer's queries come from the query latent C_Q, its one key from LayerNorm(X·W_IK); each "
    "index head scores ReLU(q·k/√D), the heads are weighted by w/√2 and summed, and each query "
    "keeps its 2 best keys: 'sat' keeps 'cat' and 'sat' but not 'the', 'on' keeps 'the' and "
    "'sat'. The indexer turns half-split pairs, the attention neighbouring pairs, as "
    "DeepSeek-V3.2 does. The target T asks each token's output to be [1, 0, 0, 1], so that "
    "--backward has a loss to start from (the indexer's choice held fixed).",
    "preset.mla.description": "Multi-head latent attention (DeepSeek-V2/V3): 5 tokens through a "
    "query latent of 3 and a key/value latent of 2 numbers a token, each normalised, and one "
    "rotary key shared by the 2 heads; with --backward, the gradients of every latent weight",
    "preset.mla.reference": "Made for qkvcalc, after DeepSeek-AI 2024, 'DeepSeek-V2: A Strong, "
    "Economical, and Efficient Mixture-of-Experts Language Model' and transformers' "
    "DeepseekV3Attention: the dsa preset's layer without its indexer. The target T asks each "
    "token's output to be [1, 0, 0, 1], so that --backward has a loss to start from: "
    "L = ½·Σ(O − T)².",
    "preset.kda.description": "Kimi Delta Attention (Kimi Linear): Gated DeltaNet with one decay "
    "per Key channel, each row of the 2×2 state decayed by its own e^g, beside the 3×3 matrix it "
    "computes without forming it",
    "preset.kda.reference": "Made for qkvcalc, after Kimi Team 2025, 'Kimi Linear' and "
    "transformers' recurrent_kimi_delta_attention: q and k are L2-normalized (q also divided by "
    "√d_k); each token multiplies row c of the state by e^(g[c]), reads what the state holds for "
    "its key, and writes β times the difference from its value along its key. The preset "
    "deltanet has the same tokens and weights with one decay per token. The chunked form (chunks "
    "of 2) gives the same output.",
    "preset.lightning.description": "Lightning attention (MiniMax): a 2×2 state decayed by "
    "e^(−λ) and added to token by token, beside the 3×3 matrix it computes without forming it",
    "preset.lightning.reference": "Made for qkvcalc, after Qin et al. 2024, 'Lightning "
    "Attention-2' and transformers' MiniMaxLightningAttention: no scaling and no softmax; each "
    "token multiplies the state by the head's fixed decay e^(−λ) and adds its key times its "
    "value. The blocked form (blocks of 2) gives the same output.",
    "preset.gqa.description": "Grouped-query attention: 4 query heads share 2 key/value heads "
    "(d_k = 1, causal)",
    "preset.multihead.description": "Two heads on 'I love cats': both read all of X, each "
    "through its own two columns of W_Q, W_K, W_V; W_O then combines them",
    "preset.fp16overflow.description": "float16 scores that overflow: q·k well past 65,504 "
    "(float16's largest) is ∞ before the scale can shrink it, and the softmax row turns NaN",
    "preset.fp16mask.description": "A −1e9 mask in float16 is −∞, and a query that may see no key "
    "gets NaN weights",
    "preset.bf16rope.description": "RoPE positions past 256 in bfloat16: a layer that keeps its "
    "positions in bfloat16 turns 'b' at 257 exactly as 'a' at 256, and 'b' splits its weight "
    "between them; transformers' float32 angles (--policy eager) keep them apart",
    "preset.bf16softmax.description": "Why the softmax is upcast: in bfloat16 with no upcast "
    "(naive) the weights stray further from float64 than eager's float32 softmax",
    "preset.bf16tiles.description": "Tiles in bfloat16: written with bfloat16 tensors (naive), "
    "the running sum ℓ = 2 cannot grow by a block's 0.0077, less than half its unit in the last "
    "place, and eight blocks are lost; FlashAttention's float32 ℓ (--policy eager) counts them",
    "preset.fp8scaling.description": "float8 with and without per-tensor scaling: a plain cast to "
    "float8_e4m3fn saturates the scores 576 and 480 at 448, two keys tie and the weight is split; "
    "stored with a scale per tensor as FP8 kernels do (--policy eager), they stay apart",
    "preset.padding.description": "A batch row padded to four tokens: key_padding keeps attention "
    "off <pad>",
    "preset.pronoun.description": "A story: in 'the cat sat because it was tired', the query "
    "of 'it' lands on 'cat'",
    "preset.sentence.description": "Three tokens, 'I love cats', with the doc weights and a "
    "causal mask",
    "preset.cross.reference": "Made for qkvcalc: the encoder-decoder attention of Vaswani et "
    "al. 2017, 'Attention Is All You Need' (section 3.2.3), where the queries come from the "
    "decoder and the keys and values from the encoder's output. 'le' finds 'the' and 'chat' "
    "finds 'cat'; W_K gives 'is' and 'sleeping' the same key, so 'dort' splits most of its "
    "weight equally between them. 3 queries and 4 keys, so the scores are 3×4.",
    "preset.alibi.reference": "Made for qkvcalc, after Press et al. 2022, 'Train Short, Test "
    "Long: Attention with Linear Biases Enables Input Length Extrapolation'. The slopes 1/2 "
    "and 1/4 are the first two of the paper's recipe for 8 heads (2^-1, 2^-2, ..., 2^-8); "
    "with alibi: true a 2-head model gets 2^-4 and 2^-8 instead. The bias -slope·|i - j| is "
    "added to the scaled scores before the causal mask.",
    "preset.llama.reference": "Made for qkvcalc, after Touvron et al. 2023, 'LLaMA: Open and "
    "Efficient Foundation Language Models', as Hugging Face's LlamaAttention computes it: "
    "q_proj, k_proj, v_proj without biases, rotary embedding with rotate_half (theta 10000) "
    "on each head, grouped-query attention (repeat_kv), a causal mask, softmax, o_proj. "
    "d_model = 4, d_k = d_v = 2.",
    "preset.rope.reference": "Made for qkvcalc, after Su et al. 2021, 'RoFormer: Enhanced "
    "Transformer with Rotary Position Embedding'. d_k = 2, so q and k have one pair of "
    "dimensions, and its frequency is theta^0 = 1: each vector turns by one radian per "
    "position. Without RoPE, 'sat' would give both copies of 'cat' the same score (1); with "
    "it, q_2·k_1 and q_4·k_3 (distance 1) are equal, cos 1 - sin 1 = -0.3012, while q_4·k_1 "
    "(distance 3) is cos 3 - sin 3 = -1.1311.",
    "preset.window.reference": "Made for qkvcalc, after Beltagy et al. 2020, 'Longformer', "
    "and Jiang et al. 2023, 'Mistral 7B'. The window W = 3 counts the query's own position: "
    "query i sees keys j with i - 3 < j <= i, the convention of Hugging Face's "
    "sliding_window. The weights are those of the 'sentence' preset.",
    "preset.decode.reference": "Made for qkvcalc, after the KV cache of Pope et al. 2022, "
    "'Efficiently Scaling Transformer Inference', and Hugging Face's past_key_values. The "
    "weights are those of the 'sentence' preset; the stacked steps equal the causal run of all "
    "four tokens.",
    "preset.tiles.reference": "Made for qkvcalc, after Milakov and Gimelshein 2018, 'Online "
    "normalizer calculation for softmax', and Dao et al. 2022, 'FlashAttention' (Algorithm 1). "
    "The weights are those of the 'sentence' preset; blocks of B = 2 keys, the last block holds "
    "one.",
    "preset.doc.reference": "The two-dimensional example of the article 'Q·K·V는 어디서 "
    "만들어질까? 가중치 행렬로 만드는 원리': one token x = [1, 2] gives Q = [1, 2], K = [1, 3], "
    "V = [3, 2]. With a single key its weight is 1 whatever the score; the sentence preset "
    "adds two tokens so that the weights compete.",
    "preset.dk64.reference": "Made for qkvcalc, to show why the scores are divided by √d_k: "
    "4 tokens with d_k = 64, as in a head of the original Transformer (d_model = 512, 8 heads). "
    "Each component of Q and K is drawn independently with mean 0 and variance 1, so each raw "
    "score q·k has variance 64 (typical size 8): unscaled, softmax would give almost all the "
    "weight to one key; divided by √64 = 8 the weights stay spread. The numbers come from "
    "Python with numpy: rng = numpy.random.default_rng(64); q = rng.standard_normal((4, "
    "64)).round(2); k = rng.standard_normal((4, 64)).round(2); v = rng.integers(-3, 4, (4, "
    "2)).",
    "preset.gqa.reference": "Made for qkvcalc, after Ainslie et al. 2023, 'GQA: Training "
    "Generalized Multi-Query Transformer Models from Multi-Head Checkpoints': query heads 1–2 "
    "read K/V head 1 and heads 3–4 read K/V head 2, as PyTorch's scaled_dot_product_attention "
    "with enable_gqa=True. Sharing keeps the KV cache half the size. d_k = 1, so the scale is "
    "1/√1 = 1.",
    "preset.multihead.reference": "Made for qkvcalc, following Vaswani et al. 2017, "
    "'Attention Is All You Need', section 3.2.2: MultiHead(Q, K, V) = Concat(head_1, "
    "head_2)·W_O. Both heads read all of X; head 1 takes columns 1–2 of W_Q, W_K, W_V and head "
    "2 columns 3–4, as nn.MultiheadAttention splits them. W_O is 4×4, so every output column "
    "can combine both heads.",
    "preset.fp16overflow.reference": "Made for qkvcalc, after the half-precision NaNs of OPT, "
    "XGLM and Qwen2 in transformers' eager attention. Row 1 of X is (180, 190); with W_Q = W_K = "
    "I, Q·Kᵀ[1,1] = 180² + 190² = 68,500, past float16's largest finite number, 65,504, so it is "
    "∞ in float16. The scale comes after the product (eager multiplies the scores), so ∞ × 1/√2 "
    "is still ∞, and e^(s − max) of that row is e^(∞ − ∞) = NaN. Taking the scale first, (q/√2)·k "
    "≈ 48,437 is finite in float16 (PyTorch gives 48,448). The float64 twin has no trouble.",
    "preset.fp16mask.reference": "Made for qkvcalc, after PyTorch issue 103749 and the −1e9 masks "
    "of hand-written layers. The first query may attend to no key (as a left-padded row of a "
    "batch). Under the naive policy the mask writes −1e9 (torch.where(mask, s, -1e9); masked_fill "
    "refuses −1e9 in float16 outright), which float16 cannot hold (its most negative finite "
    "number is −65,504): it is −∞, so row 1 is −∞ throughout, its max is −∞ and e^(−∞ − (−∞)) is "
    "NaN. With --policy eager the mask adds −65,504 instead, row 1 stays finite and its weights "
    "are spread over the keys (1/3 each, as float16 rounds it); the float64 twin gives that row "
    "weights 0, as scaled_dot_product_attention does.",
    "preset.bf16tiles.reference": "Made for qkvcalc, after Dao et al. 2022, 'FlashAttention' (its "
    "running maximum and sum, and in FlashAttention-2 the output so far, are kept in float32), "
    "and Higham 2002, 'Accuracy and Stability of Numerical Algorithms' (a sum kept in low "
    "precision loses every term below half its unit in the last place). One query, W_Q = W_K = "
    "W_V = I, scale 1: the scores are the keys' first columns, 0 for 'a' and 'b', then −5.5625 "
    "for each of sixteen more keys, two a block. Under the naive policy each small block adds 2 × "
    "e^(−5.5625) ≈ 0.0077 to ℓ = 2, where bfloat16's numbers are 0.015625 apart, so ℓ stays 2 "
    "through block 9 (float64: 2.0614) and the output is (−0.1709, 0.0310), about 10 units in the "
    "last place from float64's (−0.1658, 0.0298); the same policy without tiles sums the row in "
    "float32 and is within 0.27. Run it with --policy eager: ℓ is float32's 2.0614262 and the "
    "output (−0.1660, 0.0298) is the whole row's, 0.27 units in the last place from float64.",
    "preset.bf16rope.reference": "Made for qkvcalc, after transformers issue 29285 (RoPE losing "
    "precision in bfloat16). bfloat16 has 8 bits of mantissa, so from 256 to 512 it holds only "
    "even integers: 257 rounds to 256 and 259 to 260 (ties to even). Four tokens with the same "
    "vector (8, 0) at positions 256 to 259, W_Q = W_K = W_V = I, one pair of dimensions turning "
    "at ω = 1 (d_k = 2). Under the naive policy the positions, inv_freq, their product, cos and "
    "sin are each rounded to bfloat16, so 'a' and 'b' turn by the same angle: 'b' scores 'a' and "
    "itself alike, 64 each, and puts 0.5 of its weight on 'a' (float64: about 9e−10), and 'd' at "
    "259 turns as if it were at 260. Run it with --policy eager: the angles are taken in float32 "
    "from the positions, as transformers' rotary embedding does, and only cos and sin are rounded "
    "to bfloat16: 'b' scores 'a' 34.75 (float64: 34.58) and puts about 1.1e−9 of its weight on "
    "it.",
    "preset.bf16softmax.reference": "Made for qkvcalc, after flash-attention issue 613 ('why did "
    "you choose float32 in softmax?'). Eight tokens, W_Q = W_K = W_V = I. Under the naive policy "
    "e^(s − max), the row sum and the division are each rounded to bfloat16 (8 bits of mantissa): "
    "the weights end up to 2.45 units in the last place from their float64 twin. Run it with "
    "--policy eager: from the same bfloat16 scores, the softmax in float32 with only the weights "
    "rounded puts them within 0.53.",
    "preset.fp8scaling.reference": "Made for qkvcalc, after FP8 attention kernels "
    "(FlashAttention-3, Transformer Engine), which store Q, K and V in float8 with one scale per "
    "tensor. W_Q = W_K = W_V = I, so row 1 of the scores is 24·24 = 576, 0 and 24·20 = 480. Under "
    "the naive policy every tensor is a plain cast to float8_e4m3fn, whose largest number is 448 "
    "and which has no ∞: PyTorch's cast saturates, so 576 and 480 are both 448, the scaled scores "
    "both 320, and 'sun' splits its weight 0.5 and 0.5 between 'sun' and 'star' (float64: 1 and "
    "about 3e−30); its output is (22, 10) where float64's is (24, 0). Run it with --policy eager: "
    "each tensor is stored as s·round(t / s) with s = max|t| / 448, products are summed in "
    "float32 and multiplied back by the scales, and the scores stay in float32: row 1 is "
    "576.0001, 0 and 493.71, the weights 1, 0 and about 5e−26 (float64: about 3e−30), the output "
    "(24.000004, 0). The price: e4m3fn has 3 bits of mantissa, so 20 is stored as 20.571.",
    "preset.padding.reference": "Made for qkvcalc: 'cats sleep' padded to length 4, the way "
    "a batch of sentences of unequal length is padded; key_padding [1, 1, 0, 0] marks the real "
    "tokens, as a BERT attention_mask does. The <pad> rows still get outputs (key_padding "
    "masks keys, not queries); nothing downstream uses them.",
    "preset.pronoun.reference": "Made for qkvcalc, after the pronoun head described in the "
    "articles '[딥러닝] 트랜스포머 Attention 완벽 이해: Q, K, V의 역할과 원리' and 'Q·K·V는 "
    "어디서 만들어질까? 가중치 행렬로 만드는 원리'. The columns of X are hand-made features "
    "(noun, pronoun, verb or adjective, other word). W_Q turns 'pronoun' into the query 'I need a "
    "noun to refer to' and W_K turns 'noun' into the key 'I am a noun', so it·cat is the one "
    "large score: 'it' gives 'cat' 81% of its weight, and the output of 'it' is mostly the value "
    "of 'cat'. The causal mask lets each word see itself and the words before it. An intuition, "
    "not a trained model: learned heads are rarely this clean, their dimensions carry no names, "
    "and a head's role is learned, not assigned.",
    "preset.sentence.reference": "The weights of the doc example (from the article 'Q·K·V는 "
    "어디서 만들어질까? 가중치 행렬로 만드는 원리') on a sentence of three tokens; the causal "
    "mask lets each token see itself and the tokens before it, as in a decoder. Look at "
    "'love': its query [0, 1] points exactly along its own key [0, 1] (cos θ = 1), yet it "
    "gives 80% of its weight to 'I', whose key [1, 3] is longer: q·k = |q|·|k|·cos θ weighs "
    "length as well as direction.",
    # ---- input errors: keys and structure ----------------------------------------------
    "key.unknown_suggest": "unknown key {key!r}: did you mean {suggestion!r}?",
    "key.unknown": "unknown key {key!r}; the input format knows: {known}",
    "key.not_string": "keys must be strings, found {key}",
    "key.duplicate": "key {key!r} is given twice (as {canonical!r}): keep one",
    "input.not_object": "the input must be a JSON object with keys x, wq, wk, wv …, not a {kind}",
    "kind.list": "list",
    "kind.string": "string",
    "kind.number": "number",
    "kind.bool": "true/false value",
    "kind.null": "null value",
    "kind.value": "value of another kind",
    "input.missing": "missing {missing}: give X and the weights W_Q, W_K, W_V "
    "(or Q, K, V directly)",
    "input.missing_direct": "missing {missing}: when Q, K, V are given directly, all three "
    "are needed",
    "input.mixed": "give either X with W_Q, W_K, W_V, or Q, K, V directly, not both "
    "(found {direct} and {projecting})",
    "input.bo_without_wo": "b_O is given without W_O: the output bias belongs to the output "
    "projection",
    "input.empty": 'the input is empty: expected a JSON object such as {{"x": [1, 2], "wq": …}}',
    "input.none": "no input: give a JSON file, '-' to read standard input, --preset NAME, or "
    "--x/--wq/--wk/--wv (try: qkvcalc explain --preset doc)",
    "input.json": "not valid JSON at line {line}, column {col}: {reason}",
    "input.json_value": "not valid JSON: {reason}",
    "input.json_deep": "the JSON is nested too deeply: a matrix is a list of rows, two levels deep",
    "input.not_utf8": "the input is not UTF-8 text (byte {offset} is {byte})",
    "input.cannot_start": "the input's first byte that is not a space, {byte} (offset {offset}), "
    "starts nothing qkvcalc reads: a problem is a JSON object or a numpy .npz file",
    "input.blank_start": "the input starts with {count} {count:byte|bytes} of spaces and line "
    "breaks and goes on: a problem is a JSON object or a numpy .npz file",
    "input.too_big": "the input is larger than {limit} bytes; raise the limit with "
    "--max-bytes if you mean it",
    "input.file_missing": "no such file: {path}",
    "input.file_unreadable": "cannot read {path}: {reason}",
    "input.trace_without_input": "this is a qkvcalc trace (schema qkvcalc.trace/1) without "
    'its "input": write it again with this version\'s --format json to run it again',
    "input.trace_brief": "this trace was written with --detail brief, which leaves out the "
    "big matrices of its input ({fields}): write it with --detail full to run it again",
    "input.from": "in {origin}",
    "input.inline": "in --{option}",
    "inline.grammar": "{text!r}: write a matrix as rows of numbers split by ';', e.g. \"1 2; 3 4\"",
    "inline.comma_rows": "{text!r}: commas between groups of numbers would make one "
    "row of them all; rows are split by ';' (\"{rows}\"), and the numbers of a row by spaces "
    "or by commas, not both",
    # ---- arrays (.npz, .npy, tensors) and choosing stages (input/arrays.py, select.py) --
    "array.bad_file": "{origin} is not a numpy file qkvcalc can read: {reason}",
    "array.pickle": "{origin} holds Python objects, which qkvcalc never unpickles "
    "(allow_pickle=False): save numbers, booleans or strings",
    "array.truncated": "{origin} claims an array of {shape} ({need} {need:byte|bytes}) but holds "
    "only {have} {have:byte|bytes}",
    "array.not_npy": "{origin} is not a .npy file (numpy's np.save writes one)",
    "array.npz_member": "{origin}: the member {member!r} is not an array (.npy)",
    "array.npz_method": "{origin} is compressed with {method}; a .npz holds its arrays stored "
    "or deflated, as np.savez and np.savez_compressed write them",
    "array.npz_duplicate": "{origin} holds two members named {member!r}: which one is meant "
    "cannot be told, so neither is read",
    "array.npz_too_many": "{origin} holds {count} members; a problem has at most {limit} keys, "
    "so it is not read",
    "array.npz_empty": "{origin} holds no arrays: save a problem with "
    "np.savez(FILE, x=…, wq=…, wk=…, wv=…)",
    "array.npz_json": "{origin}: the member _json.npy must be one string holding a JSON "
    "object of the problem's other keys",
    "array.npy_as_source": "a .npy file holds one matrix, not a problem: give it to an option "
    "(--x x.npy), or save the whole problem with np.savez(FILE, x=…, wq=…, wk=…, wv=…)",
    "array.dtype": "{field} is an array of {dtype}; qkvcalc reads real numbers "
    "(and 0/1 or booleans for masks)",
    "array.too_many_dims": "{field} is a {ndim}-dimensional array ({shape}); a matrix has two "
    "dimensions (for a batch, give one item, such as x[0])",
    "select.no_stages": "--stages names no stage; the stages of this run are: {valid}",
    "select.unknown_stage_suggest": "no stage {id!r} in this run: did you mean {close!r}? "
    "Its stages are: {valid}",
    "select.unknown_stage": "no stage {id!r} in this run; its stages are: {valid}",
    "select.qualified_stage": "--stages {id!r}: a stage is chosen by its id alone, {base}, "
    "which shows it for every block and step (--head chooses a head)",
    "select.head_range": "there is no head {head}: this problem's heads are 1 to {heads}",
    # ---- input errors: numbers and matrices ------------------------------------------------
    "number.grammar": "{field}: {text!r} is not a number qkvcalc reads. Write an integer, "
    "a decimal, a fraction or a square root: 3, -0.5, 1/2, -3e-2, sqrt(2), 1/sqrt(2)",
    "number.empty": "{field}: an empty string is not a number",
    "number.too_long": "{field}: a number written with more than {limit} characters",
    "number.too_deep": "{field}: {text!r} nests parentheses or sqrt( more than {limit} deep; "
    "write the number more simply",
    "number.zero_division": "{field}: {text!r} divides by zero",
    "number.negative_sqrt": "{field}: {text!r} takes the square root of a negative number",
    "number.not_finite": "{field}: {text} is not a finite number; every number must be finite",
    "number.nan": "{field} is NaN: every number must be finite",
    "matrix.not_list": "{field} must be a matrix (a list of rows of numbers), not {value}",
    "matrix.empty": "{field} is empty: a matrix needs at least one row of numbers",
    "matrix.empty_row": "{field}: row {row} is empty: a row needs at least one number",
    "matrix.mixed": "{field}: row {row} is a number among rows: write every row as a list",
    "matrix.ragged": "{field}: row {row} is {length} long but row 1 is {width} long: every "
    "row of a matrix has the same length",
    "matrix.too_deep": "{field}{where} is a list where a number belongs: a matrix is a list of "
    "rows of numbers, two levels deep",
    "matrix.bool": "{field}{where} is true/false where a number belongs: write 1 or 0",
    "matrix.null": "{field}{where} is null where a number belongs",
    "matrix.not_number": "{field}{where} is {value}, not a number",
    "vector.not_flat": "{field} must be a flat list (one number per column), not {rows} "
    "{rows:row|rows}",
    "heads.not_positive": "{field} must be a whole number from 1 to {limit}, not {value}",
    "heads.kv_divide": "heads = {heads} is not a multiple of kv_heads = {kv_heads}: each "
    "key/value head serves the same number of query heads",
    "tokens.not_strings": "{field} must be a list of names (strings), one per row",
    "tokens.count": "the number of names in {field} is {count}, but the number of rows of "
    "{rows} is n = {n}: one name per row",
    "tokens.source_without_source": "source_tokens is given without a source matrix",
    "scale.not_number": "scale must be a number, not {value}",
    "layout.unknown": 'layout must be "rows" (Q = X·W_Q) or "torch" (weights as PyTorch '
    "stores them, out×in), not {value}",
    # ---- input errors: shapes -------------------------------------------------------------
    "shape.weight_rows": "{field} is {shape}, but the width of {what} (its number of columns) is "
    "{rows}: in {what}·{field} the inner dimensions must meet, so the number of rows of {field} "
    "must be {rows}",
    "shape.weight_rows_hint_torch": "{field} is {shape}, but the width of {what} (its number "
    "of columns) is {rows}: in {what}·{field} the inner dimensions must meet, so the number of "
    "rows of {field} must be {rows}. It looks transposed, the way PyTorch stores a linear layer "
    '(out×in): add "layout": "torch" (or --layout torch)',
    "shape.weight_rows_hint_rows": "{field} is {shape} as given in the torch layout (out×in), "
    "but the width of {what} is {rows}, so the number of columns of {field} must be {rows} "
    'there. It looks like the rows layout (in×out): drop "layout": "torch"',
    "shape.source_width": "source is {source} but X is {x}: keys and values are projected "
    "from the source with the same W_K, W_V, so both need d_model columns",
    "shape.kv_rows": "K is {k} and V is {v}: they need the same number of rows (one key and "
    "one value per token)",
    "shape.heads_divide": "the columns of {field} ({cols}) do not split into {what} = {heads} "
    "equal slices: the number of columns must be a multiple of {heads}",
    "shape.dk_mismatch": "the width of {q} is {qcols}, so with heads = {heads} each query head "
    "has d_k = {d_k}; the width of {k} is {kcols}, so with kv_heads = {kv_heads} each key head "
    "has d_k = {dk2}: queries and keys must have the same d_k to be multiplied in Q·Kᵀ",
    "shape.bias": "{field} is {length} long but the width of {weight} is {cols}: a bias adds "
    "one number to each column",
    "mask.unknown": 'mask must be "none", "causal" or a 0/1 matrix, not {value}',
    "mask.unknown_suggest": 'mask {value} is not a kind of mask: did you mean "{kind}"? (mask '
    'is "none", "causal" or a 0/1 matrix)',
    "mask.shape": "mask is {shape} but the scores are {n}×{m} (queries × keys): the mask "
    "needs one 0/1 per score",
    "mask.not_flags": "{field}{where} must be a list of 0/1, not {value}",
    "mask.not_flag": "{field}{where} is {value}: mask entries are 1 (may attend) or 0 (masked)",
    "mask.padding_length": "key_padding is {length} long but the number of keys is m = {m}: "
    "one 1 (real token) or 0 (padding) per key",
    "overflow": "the numbers overflow float64 at {stage}, row {row}, column {col} (head "
    "{head}): scale the input down",
    # ---- --dtype: the precision lab (qkvcalc.run.precision) -----------------------------
    "precision.dtype_unknown": "--dtype takes one of {known}, not {value!r}",
    "precision.policy_unknown": "--policy takes one of {known}, not {value!r}",
    "precision.with_option": "--dtype {dtype} cannot be combined with {option} (yet): run --dtype "
    "without {option}, or {option} without --dtype",
    "precision.op_unsupported": "--dtype does not compute the stage {stage} (operation {op!r}) in "
    "low precision yet: run it without --dtype",
    "precision.stored_f32": "The kernel keeps this stage in float32 (softmax(…, dtype=float32)): "
    "its numbers and units in the last place are float32's.",
    "precision.stage_exact": "Exact in {dtype}: every cell equals its float64 twin.",
    "precision.stage_error": "{dtype} against its float64 twin: largest difference {abs} ({ulp} "
    "{ulp:unit|units} in the last place, all the error so far); this stage's own rounding added "
    "up to {added} ulp.",
    "precision.policy.eager": "Computed in {dtype} as transformers' eager attention does: "
    "products summed in float32 then rounded to {dtype}; masked scores get {dtype}'s most "
    "negative finite number added; softmax in float32, the weights rounded to {dtype}. Each stage "
    "is shown beside its float64 twin.",
    "precision.policy.naive": "Computed in {dtype} as a hand-written layer does, with no upcast: "
    "−1e9 where masked, then s − max, e^(s − max), the row sum and the division each rounded to "
    "{dtype}. Each stage is shown beside its float64 twin.",
    "precision.approx": "Each result is also rounded to {dtype}, so an ≈ in the arithmetic can be "
    "that rounding rather than the decimals shown.",
    "precision.most_added": "The stage that added the most error of its own: {stage} (head "
    "{head}), up to {added} {added:unit|units} in the last place of its exact result on its own "
    "{dtype} operands.",
    "precision.mask_eager": "Where masked, {fill} ({dtype}'s most negative finite number) is "
    "added to the score in float32 and the sum rounded to {dtype}, as transformers' eager "
    "attention adds its mask: a masked cell is not −∞ but a very negative number (in float16, a "
    "score below about −16 plus −65,504 rounds to −∞).",
    "precision.mask_naive": "Where masked, the cell is {fill} rounded to {dtype}, as a "
    "hand-written layer's torch.where(mask, s, −1e9) gives it (in float16 that is −∞; PyTorch's "
    "masked_fill refuses −1e9 in float16 outright: the value overflows).",
    "precision.fully_masked_equal": "Head {head}: queries whose every key is masked: {rows}. In "
    "{dtype} the masked scores are finite (each its score plus the fill, rounded), so softmax "
    "spreads those rows over the keys (equally where the sums rounded alike) instead of giving 0 "
    "(the float64 twin's 0, as PyTorch's scaled_dot_product_attention returns).",
    "precision.fully_masked_nan": "Head {head}: queries whose every key is masked: {rows}. In "
    "{dtype} those scores are all −∞, so their softmax is NaN (e^(−∞ − (−∞))), and so is every "
    "later cell they feed (the float64 twin's weights there are 0).",
    "precision.why.overflow": "First cell that is not finite: row {row}, column {col} of {stage} "
    "(head {head}) is {got}. Its exact value, {exact}, is past {dtype}'s largest finite number, "
    "{max}, so it rounds to {got}.",
    "precision.why.mask": "First cell that is not finite: row {row}, column {col} of {stage} "
    "(head {head}) is {got}. The mask adds {dtype}'s most negative finite number, {fill}, to the "
    "score {score}; the sum is past −{max}, so it rounds to −∞. A row whose every key is masked "
    "is then −∞ throughout, and its softmax is NaN (e^(−∞ − (−∞))).",
    "precision.why.fill": "First cell that is not finite: row {row}, column {col} of {stage} "
    "(head {head}) is {got}. The mask writes {fill}, which is past −{max} ({dtype}'s most "
    "negative finite number): in {dtype}, −1e9 is −∞. A row whose every key is masked is then NaN "
    "after the softmax.",
    "precision.why.nan_row": "First cell that is not finite: row {row}, column {col} of {stage} "
    "(head {head}) is NaN. Every score of row {row} is −∞ (every key masked, with a fill that "
    "rounded to −∞ in {dtype}), so the row max is −∞ and e^(−∞ − (−∞)) is NaN.",
    "precision.fp8_stored": "Stored in {dtype} with one scale for the whole tensor, as FP8 "
    "kernels store it: each number is s × a {dtype} number, s = max|t| / {top} = {scale}.",
    "precision.fp8_product": "Read in {dtype} with one scale per tensor, s_A = {a} and s_B = {b}: "
    "the {dtype} numbers multiplied and summed in float32, then times s_A·s_B (and the bias "
    "added) in float32.",
    "precision.fp8_kept": "FP8 kernels keep this stage in float32 (only what a product reads is "
    "stored in float8): its numbers are float32's, its errors counted in {dtype}'s units in the "
    "last place at each number's size.",
    "precision.policy.eager_fp8": "Computed as FP8 attention kernels do: X, the weights and "
    "biases, and every matrix a product reads (Q, K, V, the attention weights) are stored in "
    "{dtype} with one scale per tensor, s = max|t| / {dtype}'s largest finite number; products "
    "are summed in float32 and multiplied back by the scales; the scores, the mask, the softmax "
    "and each product's result stay in float32. Each stage is shown beside its float64 twin.",
    "precision.policy.naive_fp8": "Computed in {dtype} as a plain cast gives it, with no scale "
    "and no upcast: every tensor and every stage rounded to {dtype} (float8_e4m3fn has no ∞: "
    "PyTorch's cast saturates at ±448); −1e9 where masked, then s − max, e^(s − max), the row sum "
    "and the division each rounded. Each stage is shown beside its float64 twin.",
    "precision.rope_positions": "The positions are rounded to {dtype} before the angles are "
    "taken: {positions} (bfloat16 holds every integer only up to 256, float16 up to 2,048), so a "
    "token there turns by another position's angle, and two tokens can turn alike.",
    "precision.rope_float32": "The angles are taken in float32 from the positions, as "
    "transformers' rotary embedding does (every integer position up to 16,777,216 keeps its own), "
    "cos and sin are rounded to {dtype}, then each product and the sum are rounded to {dtype}.",
    "precision.sdpa_float8": "--policy sdpa takes float32, bfloat16 or float16, not --dtype "
    "{dtype}: torch's scaled_dot_product_attention has no float8 kernel on the CPU (use --policy "
    "eager or naive)",
    "precision.sdpa_kept": "torch's scaled_dot_product_attention ({kernel} kernel) does not keep "
    "this stage: it is shown in float32, as the kernel computes it.",
    "precision.mask_sdpa": "Where masked, {fill}: scaled_dot_product_attention turns a boolean "
    "mask into −∞ (in float32 inside the kernel); a query whose every key is masked gets weights "
    "0 and output 0, as the kernel gives it.",
    "precision.policy.sdpa_flash": "Computed as torch's scaled_dot_product_attention does in "
    "{dtype} on the CPU, with its flash kernel (d_k = d_v): Q·Kᵀ, the scaling, the mask and e^(s "
    "− max) in float32; e^(s − max) rounded to {dtype} for P·V and the row sum taken from the "
    "float32 exponentials; the output rounded to {dtype}. The kernel divides by the row sum after "
    "P·V; the weights shown are the {dtype} exponentials times 1/row sum in float32, which gives "
    "the same output to a few float32 units. The projections as transformers' eager attention. "
    "Each stage is shown beside its float64 twin.",
    "precision.policy.sdpa_math": "Computed as torch's scaled_dot_product_attention does in "
    "{dtype} on the CPU, with its math kernel (d_k ≠ d_v): everything in float32 and only the "
    "output rounded to {dtype} (the kernel applies √scale to Q and to K before the product; shown "
    "here as one scaling after it, the same to a few float32 units). The projections as "
    "transformers' eager attention. Each stage is shown beside its float64 twin.",
    "precision.tiles_kept": "The tiled kernel keeps this stage in float32, as FlashAttention "
    "keeps its running maximum, sum and output block by block: its numbers and units in the last "
    "place are float32's.",
    "precision.tiles.flash": "With --tiles the softmax and A·V are not computed whole but in "
    "tiles, as FlashAttention computes them: the running maximum, the correction e^(m_old − "
    "m_new), the exponentials e^(s − m), the running sum ℓ and the output so far O in float32; "
    "e^(s − m) rounded to {dtype} where E·V reads it, the product accumulated in float32; the "
    "output O × (1/ℓ) taken in float32 and rounded to {dtype} once, at the end.",
    "precision.tiles.fp8": "With --tiles the softmax and A·V are not computed whole but in tiles, "
    "as FlashAttention computes them, with FP8 products: the running maximum, the correction, the "
    "exponentials, the running sum and the output so far in float32; each block's E·V read in "
    "{dtype} with one scale per tensor, as every other product; the output O × (1/ℓ) kept in "
    "float32.",
    "precision.tiles.math": "With --tiles the softmax and A·V are not computed whole but in "
    "tiles, in float32 throughout, as torch's math kernel computes its softmax (that kernel does "
    "not tile: the tiles are FlashAttention's loop on its numbers): the running maximum, the "
    "correction, the exponentials, the running sum and the output so far in float32, e^(s − m) "
    "not rounded before E·V; the output O × (1/ℓ) rounded to {dtype} once, at the end.",
    "precision.tiles.naive": "With --tiles the softmax and A·V are not computed whole but in "
    "tiles, written with tensors in {dtype} and no upcast: m_old − m_new, the correction e^(m_old "
    "− m_new), s − m, the exponentials e^(s − m), ℓ·c, the block's sum (accumulated in float32), "
    "the running sum ℓ, O·c, E·V (accumulated in float32), the output so far O and the final O / "
    "ℓ each rounded to {dtype}: every later block's rescale rounds the sum and the output so far "
    "again.",
    "precision.decode": "Decoding: a step's new rows of K and V join the cache as they were "
    "computed (moving them rounds nothing), and the step's queries are computed against every "
    "cached key with the same rounding as the whole run's.",
    "precision.decode_whole": "Against the same attention computed all at once in {dtype} under "
    "--policy {policy} (the ordinary causal run): {same} of {cells} {cells:cell|cells} the same "
    "bit for bit; the largest difference is {gap}, {ulp} ulp of {dtype}.",
    "precision.tiles_whole": "Against the ordinary softmax(S)·V over whole rows in {dtype} under "
    "--policy {policy}: {same} of {cells} {cells:cell|cells} the same bit for bit; the largest "
    "difference is {gap}, {ulp} ulp of {dtype}.",
    "precision.softcap": "As Gemma 2's eager attention caps its scores: S / {cap}, its tanh and "
    "the product by {cap}, each computed in float32 and rounded to {dtype}.",
    "precision.rmsnorm_eager": "As transformers' RMSNorm computes it: the row in float32, "
    "mean(x²), 1/√(mean + ε) and x times it in float32, rounded to {dtype}; then the weight (in "
    "{dtype}) times that, rounded to {dtype}.",
    "precision.rmsnorm_naive": "Written with tensors in {dtype} and no upcast, x / √(mean(x²) + "
    "ε) · w: x², the mean, the mean + ε, its square root, the division and the product by the "
    "weight each rounded to {dtype}.",
    "precision.v_norm_eager": "As Gemma 3n's and Gemma 4's norm on V (RMSNorm without a weight) "
    "computes it: the row in float32, mean(x²), 1/√(mean + ε) and x times it in float32, rounded "
    "to {dtype} once.",
    "precision.v_norm_naive": "Written with tensors in {dtype} and no upcast, V / √(mean(V²) + "
    "ε): V², the mean, the mean + ε (ε too in {dtype}: torch adds a Python number to a tensor "
    "so), its square root and the division each rounded to {dtype}.",
    "precision.diff_maps_eager": "DiffLlama never forms Δ: it multiplies V'' by each of the two "
    "maps apart (one attention call each) and takes λ times the second output from the first (the "
    "next stage). Δ is shown here in float32, from the {dtype} weights and λ = {lam} (DiffLlama's "
    "λ is a tensor in {dtype}), to be read (its numbers and units in the last place are "
    "float32's); the next stage does not read it.",
    "precision.diff_maps_naive": "Written with tensors in {dtype}: λ = {lam} (in {dtype}) times "
    "the second map, and the first map less that, each rounded to {dtype}.",
    "precision.diff_output_eager": "As DiffLlama's eager attention computes it: the first map "
    "times V'' and the second map times V'', each summed in float32 and rounded to {dtype}; λ "
    "times the second, rounded to {dtype}; the first less that, rounded to {dtype}. It is not "
    "Δ·V'' from the Δ shown above, so the cell arithmetic below, which redoes that product, can "
    "differ from it in the last digits.",
    "precision.diff_norm_eager": "As DiffLlama's group norm (torch's RMSNorm without a weight) "
    "computes it: the row in float32, mean(x²), 1/√(mean + ε) and x times it in float32, rounded "
    "to {dtype} once.",
    "precision.diff_norm_naive": "Written with tensors in {dtype} and no upcast, D / √(mean(D²) + "
    "ε): D², the mean, the mean + ε (ε too in {dtype}: torch adds a Python number to a tensor "
    "so), its square root and the division each rounded to {dtype}.",
    "precision.diff_scale": "Each cell times 1 − λ_init = {factor} in float32 (torch multiplies a "
    "tensor by a Python number so), rounded to {dtype}.",
    "precision.sdpa_differential": "--policy sdpa does not compute differential attention yet "
    "(DiffLlama calls torch's kernel twice, once with each half of V''): use --policy eager or "
    "naive",
    "precision.sdpa_feature": "--policy sdpa cannot compute {feature}: torch's "
    "scaled_dot_product_attention has no place for it (use --policy eager or naive)",
    "precision.feature_unsupported": "--dtype does not compute {feature} in low precision yet "
    "(its stage {stage}, operation {op!r}): run it without --dtype, or without {feature}",
    # ---- --dtype: the linear-attention layers (qkvcalc.ops.state_rounding) -------------------
    "precision.sdpa_linear": "--policy sdpa does not apply to a linear-attention layer: it calls "
    "no attention kernel (use --policy eager or naive)",
    "precision.policy.gated_delta.eager": "Computed in {dtype} as Qwen3-Next's token-by-token "
    "torch path (torch_recurrent_gated_delta_rule, which it runs when decoding; a prompt goes "
    "through torch_chunk_gated_delta_rule, also in float32) does: the projections summed in "
    "float32 and rounded to {dtype}; then q, k, v, g and β cast to float32, the L2 norms, the "
    "state and the output computed in float32 token by token, and only the output cast back to "
    "{dtype}. Each stage is shown beside its float64 twin.",
    "precision.policy.gated_delta.eager_fp8": "Computed with FP8 products: X and the weights "
    "stored in {dtype} with one scale per tensor, each projection summed in float32 and kept in "
    "float32; then q, k, v, g and β in float32, the L2 norms, the state and the output computed "
    "in float32 token by token, as Qwen3-Next's torch fallback does. Each stage is shown beside "
    "its float64 twin.",
    "precision.policy.gated_delta.naive": "Computed in {dtype} as a hand-written layer does, with "
    "no upcast: the L2 norms, every step of the state and the output each rounded to {dtype} (the "
    "state itself kept in {dtype}). Each stage is shown beside its float64 twin.",
    "precision.policy.kimi_delta.eager": "Computed in {dtype} as Kimi Linear's token-by-token path "
    "(recurrent_kimi_delta_attention, which it runs when decoding; a prompt goes through "
    "chunk_kimi_delta_attention, also in float32) does: the projections summed in float32 and "
    "rounded to {dtype}; then q, k, v, g and β cast to float32, the L2 norms, the state and the "
    "output computed in float32 token by token, and only the output cast back to {dtype}. Each "
    "stage is shown beside its float64 twin.",
    "precision.policy.kimi_delta.eager_fp8": "Computed with FP8 products: X and the weights "
    "stored in {dtype} with one scale per tensor, each projection summed in float32 and kept in "
    "float32; then q, k, v, g and β in float32, the L2 norms, the state and the output computed "
    "in float32 token by token, as Kimi Linear's recurrent_kimi_delta_attention does. Each stage "
    "is shown beside its float64 twin.",
    "precision.policy.kimi_delta.naive": "Computed in {dtype} as a hand-written layer does, with "
    "no upcast: the L2 norms, every step of the state and the output each rounded to {dtype} (the "
    "state itself kept in {dtype}). Each stage is shown beside its float64 twin.",
    "precision.l2norm_eager": "After the layer's cast to float32 (Qwen3-Next and Kimi Linear cast "
    "q and k before the norm): Σx², x·(1/√(Σx² + 10⁻⁶)) and the scale each in float32, kept in "
    "float32: its numbers and units in the last place are float32's. The inputs were {dtype}'s.",
    "precision.l2norm_naive": "Written with tensors in {dtype} and no upcast: x², the sum "
    "(accumulated in float32), + 10⁻⁶, the square root, the division and the scale each rounded "
    "to {dtype}.",
    "precision.l2norm_eager_unscaled": "After the layer's cast to float32 (Qwen3-Next and Kimi "
    "Linear cast q and k before the norm): Σx² and x·(1/√(Σx² + 10⁻⁶)) each in float32, kept in "
    "float32: its numbers and units in the last place are float32's. The inputs were {dtype}'s.",
    "precision.l2norm_naive_unscaled": "Written with tensors in {dtype} and no upcast: x², the "
    "sum (accumulated in float32), + 10⁻⁶, the square root and the division each rounded to "
    "{dtype}.",
    "precision.state_eager": "The {dtype} run keeps the state in float32, as the layer does (it "
    "cast q, k, v, g and β to float32): e^(g), the decay, m, v − m, times β, k̂·δᵀ and the sum "
    "each rounded to float32. Its numbers and units in the last place are float32's.",
    "precision.state_naive": "The state is kept in {dtype}: e^(g), the decay, m (its products "
    "rounded, then summed in float32 and rounded), v − m, times β, k̂·δᵀ and the sum each rounded "
    "to {dtype}, at every token: the rounding of one step is carried into every later one.",
    "precision.read_eager": "o_t = S_tᵀ·q̂_t in float32 (each product and the sum rounded to "
    "float32), then cast to {dtype} once, as the layer returns its output.",
    "precision.read_naive": "o_t = S_tᵀ·q̂_t with tensors in {dtype}: each product rounded, the "
    "sum accumulated in float32 and rounded to {dtype}.",
    "precision.weights_shown": "The layer never forms W: it is shown in float32, computed exactly "
    "from the {dtype} run's q̂, k̂, g and β and rounded to float32 once, to be read beside the "
    "output (no later stage reads it). Its numbers and units in the last place are float32's.",
    "precision.chunked_shown": "The chunked form is shown in float32, computed exactly from the "
    "{dtype} run's q̂, k̂, v, g and β and rounded to float32 once: how far the output below is "
    "from it is the rounding of the steps token by token. Its numbers and units in the last place "
    "are float32's.",
    "precision.conv_eager": "As causal_conv1d_fn computes it in {dtype}: each output's taps "
    "multiplied and summed, rounded to {dtype} once; then SiLU in float32, rounded to {dtype}.",
    "precision.conv_naive": "The convolution rounded to {dtype} once, then SiLU written by hand "
    "with tensors in {dtype}: σ(x) rounded, and x·σ(x) rounded.",
    "precision.gates_eager": "g as the layer makes it, from a.float(): dt_bias and A_log "
    "parameters in {dtype}, a + dt_bias, e^(A_log), the softplus and the product each in "
    "float32, so g stays in float32; β = σ(b) rounded to {dtype}. The stage's numbers and units in "
    "the last place are float32's.",
    "precision.gates_naive": "Written with tensors in {dtype}: a + dt_bias, e^(A_log), the "
    "softplus and the product each rounded to {dtype}, and β = σ(b) rounded to {dtype}.",
    "precision.kda_gates_eager": "g as Kimi Linear's forget gate makes it, from F.float(): "
    "dt_bias and A_log parameters in {dtype}, F + dt_bias, e^(A_log), the softplus and the "
    "product each in float32, so g stays in float32; β = σ(b) rounded to {dtype}. The stage's "
    "numbers and units in the last place are float32's.",
    "precision.kda_gates_naive": "Written with tensors in {dtype}: F + dt_bias, e^(A_log), the "
    "softplus and the product each rounded to {dtype}, and β = σ(b) rounded to {dtype}.",
    "precision.kda_gates_float32": "g as Ling 3.0's forget gate makes it: A_log and dt_bias kept "
    "in float32 (its checkpoint keeps them so in any dtype), F.float() + dt_bias, e^(A_log), the "
    "softplus and the product each in float32, then g cast to {dtype}; β = σ(b) rounded to "
    "{dtype}.",
    "precision.kda_bounded_float32": "g as Ling 3.0's forget gate makes it: A_log and dt_bias "
    "kept in float32 (its checkpoint keeps them so in any dtype), F.float() + dt_bias, e^(A_log), "
    "the product, σ and the bound (lower_bound) times it each in float32, then g cast to "
    "{dtype}; β = σ(b) rounded to {dtype}.",
    "precision.kda_bounded_naive": "Written with tensors in {dtype}: A_log and dt_bias rounded to "
    "{dtype}, F + dt_bias, e^(A_log), the product, σ and the bound (lower_bound) times it each "
    "rounded to {dtype}, and β = σ(b) rounded to {dtype}.",
    "precision.conv_float32": "As Ling 3.0's causal_conv1d_fn computes it with conv1d kept in "
    "float32 (its checkpoint keeps it so in any dtype): the {dtype} inputs taken to float32, each "
    "output's taps multiplied and summed in float32, SiLU in float32, then rounded to {dtype} "
    "once.",
    "precision.gated_norm_eager": "As Qwen3NextRMSNormGated computes it: the row in float32, "
    "mean(x²), 1/√(mean + ε) and x times it in float32, cast to {dtype}; then the weight (in "
    "{dtype}) times that, rounded to {dtype}.",
    "precision.gated_norm_strict": "As KimiLinearRMSNormGated computes it, in float32 "
    "throughout: mean(x²), 1/√(mean + ε), x times it, and the weight (cast from {dtype} to "
    "float32) times that; kept in float32 until after the gate. Its numbers and units in the last "
    "place are float32's.",
    "precision.gated_norm_naive": "Written with tensors in {dtype} and no upcast: x², the mean, "
    "the mean + ε, its square root, the division and the product by the weight each rounded to "
    "{dtype}.",
    "precision.gated_eager": "N times the activation of Z (taken in float32 from Z.float()), in "
    "float32, cast to {dtype} once.",
    "precision.gated_naive": "The activation of Z rounded to {dtype}, then N times it rounded to "
    "{dtype}.",
    "precision.policy.lightning.eager": "Computed in {dtype} as MiniMax's lightning attention "
    "does in transformers: nothing is cast to float32, so the state is kept in {dtype} and each "
    "step's products and sums are rounded to {dtype} (matrix products summed in float32 first); "
    "only the RMSNorm over the heads is taken in float32. Each stage is shown beside its float64 "
    "twin.",
    "precision.policy.lightning.eager_fp8": "Computed with FP8 products: X and the weights stored "
    "in {dtype} with one scale per tensor, each projection summed in float32 and kept in float32; "
    "every later stage of the layer (the state, the output, the norm) computed and kept in "
    "float32. Each stage is shown beside its float64 twin.",
    "precision.policy.lightning.naive": "Computed in {dtype} as a hand-written layer does, with no "
    "upcast: SiLU, the state, the output and the RMSNorm over the heads each rounded to {dtype} "
    "op by op. Each stage is shown beside its float64 twin.",
    "precision.lightning_weights_shown": "The layer never forms W: it is shown in float32, "
    "computed exactly from the {dtype} run's q, k and λ and rounded to float32 once, to be read "
    "beside the output (no later stage reads it). Its numbers and units in the last place are "
    "float32's.",
    "precision.silu_naive": "Written with tensors in {dtype}: −x, e^(−x), 1 + e^(−x) and the "
    "division each rounded to {dtype}.",
    "precision.lightning_state": "The state is kept in {dtype}, as MiniMax's layer keeps it (it "
    "casts nothing to float32): the ratio r {ratio} ({dtype}'s e^(−λ): λ rounded to {dtype}, "
    "its e^ rounded), k_t·v_tᵀ, r·S_(t−1) and the sum each rounded to {dtype}, at every token.",
    "precision.lightning_read": "o_t = q_t·S_t as torch.matmul computes it in {dtype}: the "
    "products summed in float32, rounded to {dtype} once. This is the recurrent path MiniMax "
    "takes token by token when decoding.",
    "precision.lightning_blocked": "The blocked form as MiniMax computes a prompt in {dtype}: the "
    "decays made in float32 from λ and stored in {dtype} (the layer's buffers), each matrix "
    "product summed in float32 and rounded to {dtype}, each elementwise product, sum and the "
    "state carried between blocks rounded to {dtype}. In {dtype} it need not equal the output "
    "below: the two forms round in different places.",
    "precision.lightning_rms_eager": "As MiniMaxRMSNorm computes it: the heads' outputs side by "
    "side in float32, mean(x²) and √(mean + ε) in float32 (the layer multiplies by its "
    "reciprocal). Its numbers and units in the last place are float32's; the outputs were "
    "{dtype}'s.",
    "precision.lightning_rms_naive": "Written with tensors in {dtype}: x², the mean, the mean + ε "
    "and the square root each rounded to {dtype}.",
    "precision.lightning_apply_eager": "As MiniMaxRMSNorm computes it: out times 1/r in float32, "
    "cast to {dtype}, then the weight (in {dtype}) times that, rounded to {dtype}.",
    "precision.lightning_apply_naive": "Written with tensors in {dtype}: out / r rounded, then "
    "times the weight rounded to {dtype}.",
    "precision.index_scores_eager": "As transformers' DeepseekV32Indexer computes them on the "
    "CPU from the {dtype} q_I and k_I: q.float() @ k.float() times 1/√D, ReLU, the weights "
    "w.float() times 1/√H_I, and their sum over the index heads, each in float32: the scores stay "
    "in float32 (DeepSeek's own kernel scores in FP8; transformers skips that). Their numbers "
    "and units in the last place are float32's.",
    "precision.index_scores_naive": "Written with tensors in {dtype}: each head's q·k (summed in "
    "float32), times 1/√D, the weights times 1/√H_I and the sum over the index heads each "
    "rounded to {dtype}.",
    "precision.mask_wide": "Where masked, {fill} ({dtype}'s most negative finite number, the "
    "model's additive mask) is added to the float32 score in float32: the scores stay float32's.",
    "precision.selection_same": "In {dtype} every query keeps the same keys as its float64 twin.",
    "precision.selection_changed": "In {dtype} the top-k keeps other keys than the float64 twin "
    "for {count} of the queries (each: the keys the twin kept → the keys {dtype} kept instead): "
    "{rows}. Rounding moved scores across the cut, or made them equal (then qkvcalc keeps the "
    "earlier key; torch.topk does not promise which). Every head's mask below applies {dtype}'s "
    "choice, as the model would, so those rows attend to other keys than the twin's.",
    "precision.fp8_kept_layer": "The FP8 policy keeps this stage in float32: its numbers are "
    "float32's, its errors counted in {dtype}'s units in the last place at each number's size. In "
    "this layer only what is given (X, the weights, the parameters) is stored in {dtype}; every "
    "stage computed from it is computed and kept in float32.",
    "precision.softcap_reached": "Cells at ±{cap} exactly: {count} (their tanh rounded to ±1 in "
    "{dtype}). In {dtype} the cap is reached, not only approached as in float64.",
    "precision.sinks_eager": "As gpt-oss's eager attention: σ (a parameter in {dtype}) joins the "
    "row, the row's maximum is subtracted in {dtype} (rounded), and softmax(…, dtype={dtype}) "
    "takes e^ of that in float32 inside itself, sums it in float32 and rounds only the weights.",
    "precision.softmax_inside": "torch's softmax computes this inside itself in float32 and never "
    "stores it: its numbers and units in the last place are float32's.",
    "precision.temperature": "As Llama 4 scales its queries: τ in float32, q × τ in float32, "
    "rounded to {dtype} once.",
    "precision.temperature_naive": "Written with tensors in {dtype}: τ rounded to {dtype}, then q "
    "× τ rounded to {dtype}.",
    "precision.layernorm_eager": "As F.layer_norm computes it on the CPU (StableLM's, Phi's q/k "
    "norm): in float32, μ and r = 1/√(mean((x − μ)²) + ε), then x·r + (−r·μ), times the weight, "
    "plus the bias (the parameters in {dtype}), each step rounded to float32 and the result to "
    "{dtype} once.",
    "precision.layernorm_naive": "Written with tensors in {dtype} and no upcast: μ, x − μ, its "
    "square, their mean, + ε, the root, the division, the product by the weight and the bias "
    "added each rounded to {dtype}.",
    # ---- command line -------------------------------------------------------------------
    "cli.preset_unknown": "no preset named {name!r}; the presets are: {names}",
    "cli.presets_missing": "the presets folder is missing from this installation ({path}): "
    "reinstall qkvcalc",
    "cli.preset_unknown_suggest": "no preset named {name!r}: did you mean {suggestion!r}? "
    "(qkvcalc presets lists them)",
    "cli.two_sources": "give one input, not several: {sources}",
    "cli.two_losses": "give one loss option, not several: {options} (each chooses where the "
    "gradient starts: --grad-output dL/dO, --target T, --attend the keys)",
    "cli.usage_error": "Error: {message}",
    "cli.try_help": "Try '{command} {option}' for help.",
    "cli.no_such_option": "No such option: {name}",
    "cli.possible_options": "(Possible options: {names})",
    "cli.invalid_value": "Invalid value for {name}: {message}",
    "cli.invalid_value_unnamed": "Invalid value: {message}",
    "cli.not_one_of": "{value} is not one of {choices}.",
    "cli.not_a_valid": "{value} is not a valid {kind}.",
    "cli.kind.int": "int",
    "cli.kind.int_range": "int range",
    "cli.kind.float": "float",
    "cli.kind.float_range": "float range",
    "cli.not_in_range": "{value} is not in the range {range}.",
    "cli.missing_argument": "Missing argument {name}.",
    "cli.missing_option": "Missing option {name}.",
    "cli.missing_parameter": "Missing parameter {name}.",
    "cli.choose_from": "Choose from:\n\t{choices}",
    "cli.option_needs_value": "Option {name} requires an argument.",
    "cli.option_needs_values": "Option {name} requires {count} arguments.",
    "cli.extra_arguments": "Got unexpected extra argument(s) ({args})",
    "cli.no_such_command": "No such command {name}.",
    "cli.interrupted": "interrupted",
    "cli.stdout_failed": "cannot write to standard output: {reason}",
    "cli.error_prefix": "error",
    # ---- torch script (issue 3) ---------------------------------------------------------
    "ui.heads_group_kv": "Head {head} of {heads} · reads key/value head {kv_head} "
    "(shared by query heads {first}–{last})",
    "ui.concat_span": "head {head} → {cols}",
    "note.concat_columns": "Columns of the joined result, by head: {spans}.",
    "note.cross_axes": "Rows are the queries (n = {n}, from X), columns the keys (m = {m}, "
    "from the source): cross-attention scores are n×m, and n need not equal m.",
    # ---- exports: markdown, latex, html, svg (issue 4) ------------------------------------
    "export.hangul_without_kotex": "[Korean text: kotex is not installed]",
    "export.title": "Attention, step by step",
    "export.rows": "Rows: {labels}.",
    "export.cols": "Columns: {labels}.",
    "export.output_unwritable": "cannot write {path}: {reason}",
    "export.output_extension": "--output {path}: the extension {ext} names no format; use "
    "one of {known}, or choose one with --format",
    "export.unknown_format": "no format is called {format}; the formats are {known}",
    # ---- step mode (issue 4) ------------------------------------------------------------
    "step.option_help": "Show the problem, then one stage at a time in the terminal: Enter, "
    "Space or → next; b or ← back; ↓ ↑ j k PgDn PgUp scroll; a number and Enter go to that "
    "stage; Home, End; n, p next or previous head; ? all the keys; q quit.",
    "step.header": "stage {number} of {total} — {formula}",
    "step.header_head": "stage {number} of {total} — {formula} · head {head}",
    "step.header_pair": "stage {number} of {total} — {formula} · pair {pair}",
    "step.keys": "→ next · ← back · ↓↑ scroll · ? keys · q quit",
    "step.done": "All {total} stages shown. The result:",
    # ---- step mode, round two (issue 17) --------------------------------------------------
    "step.problem_header": "the problem — {total} stages follow",
    "step.intro_next": "Enter or → for stage 1 of {total}; a stage's number and Enter go "
    "straight to it; ? shows every key.",
    "step.lines": "↕ {first}–{last}/{total}",
    "step.jump": "go to stage {typed}… (Enter)",
    "step.jump_bad": "there is no stage {typed}: the stages are 1 to {total}",
    "step.one_head": "n and p move between heads, and this problem has one head",
    "step.help_title": "Keys",
    "step.help": "Enter, Space, →     next stage\n"
    "b, ←                previous stage\n"
    "↓ ↑, j k            scroll a tall stage by a line\n"
    "PgDn PgUp           scroll by a screen\n"
    "12 Enter            go to stage 12\n"
    "Home, End           the problem, the last stage\n"
    "n, p                next or previous head\n"
    "?                   these keys\n"
    "q, Esc              quit (Ctrl-C too)",
    "step.help_close": "Any key goes back to the stage.",
    "studio.inputs": "The problem: type a number, then Enter (or leave the box)",
    "studio.options": "Options (JSON or a word; empty leaves it out)",
    "studio.part": "rows {rows}, columns {cols} shown (arrow keys bring the others)",
    "studio.input_cell": "{cell} = {value}: Enter, or leaving the box, recomputes every stage",
    "studio.option_cell": "option {name}: Enter, or leaving the box, recomputes every stage",
    "studio.no_arithmetic": "{name}[{i},{j}] = {value}: this stage's cells have no arithmetic "
    "of their own (they are read or moved from another stage)",
    "studio.was": "(was {old})",
    "studio.changed": "changed by the last edit: {cells}",
    "studio.more": "and {count} more",
    "studio.status": "stage {number} of {total} · ? keys · Ctrl+Q quits",
    "studio.saved": "The problem is saved to {path}.",
    "studio.nothing_to_undo": "There is no edit to undo.",
    "studio.keys": "Tab, Shift+Tab      next or previous box\n"
    "↑ ↓ ← →             move between the boxes of a matrix\n"
    "Enter               recompute (so does leaving the box)\n"
    "Esc                 leave the boxes: the keys below work\n"
    "Enter, Space, →     next stage\n"
    "b, ←                previous stage\n"
    "Home, End           the first, the last stage\n"
    "n, p                next or previous head\n"
    "↓ ↑, j k            scroll the stages\n"
    "Ctrl+Z              undo the last edit\n"
    "s                   save the problem as JSON\n"
    "?                   these keys\n"
    "q, Ctrl+Q           quit (q when no box has focus)",
    "studio.serving": "The studio is served at http://{host}:{port}; Ctrl+C stops it.",
    "studio.serving_local": "Only this machine can open it ({host} is its loopback address).",
    "studio.serving_open": "Anyone who can reach this machine on port {port} can open it and "
    "run the studio on it: every address of this machine is listening ({host}).",
    "studio.serving_host": "Anyone who can reach {host} on port {port} can open it and run the "
    "studio on this machine.",
    "studio.serve_missing": "--serve needs textual-serve, which is not installed: pip install "
    "'qkvcalc[serve]'",
    "studio.no_terminal": "qkvcalc studio reads its keys from a terminal and draws on it, and "
    "there is none here (no /dev/tty): run it in a terminal, or add --serve to open it in a "
    "browser",
    "studio.stdin": "qkvcalc studio reads its keys from the terminal (and --serve starts it anew "
    "for every browser), so its problem comes from a file or a preset, not standard input",
    "quiz.answer_too_long": "a typed line of more than {limit} characters is no answer; "
    "nothing was read past it",
    "quiz.answer_not_utf8": "a typed line is not UTF-8 text, so it cannot be read",
    "quiz.no_terminal": "the problem came in on standard input, so the answers are read from a "
    "terminal, and there is none here: give the problem as a file or --preset, or grade a sheet "
    "with --answers",
    "step.no_terminal": "--step reads keys from a terminal, and there is none here (no "
    "/dev/tty): run it in a terminal, or leave out --step to print every stage at once",
    "step.with_format": "--step shows the table one stage at a time in the terminal, so it "
    "does not combine with --format {format}: leave out one of them",
    "step.with_output": "--step shows the stages in the terminal, so it does not combine with "
    "--output: leave out --step to write the file",
    "explain.worksheet_format": "--worksheet leaves the computed numbers blank for a student to "
    "write in, so it goes with the formats people read (table, txt, markdown, html, latex, svg), "
    "not --format {format}. A blank answer sheet in JSON: qkvcalc quiz --template",
    # ---- quiz and new (issue 5) ---------------------------------------------------------
    "quiz.intro": "Work each stage out by hand and type one cell at a time: 7, -0.5, 7/sqrt(2), "
    "4.95 or 4,95 are all fine. An answer is right when it agrees to {precision} "
    "{precision:decimal|decimals}. ? gives a hint; Enter or skip moves on; Ctrl-C stops and shows "
    "the score so far.",
    "quiz.random_seed": "A random problem, seed {seed}. The same quiz again: {command}",
    "quiz.stage_heading": "Stage {number}/{total}: {title}  ·  {formula}  ·  {shape}",
    "quiz.prompt": "{cell} = ",
    "quiz.bad_answer": "{reason}. Try again.",
    "quiz.wrong": "{cell} is {expected}, not {answer}.",
    "quiz.carried": "{cell}: right for this step, and counted right: from your own earlier "
    "answers it is {own}, as you wrote ({answer}). Its true value is {expected}: the mistake "
    "started at {origin} and carries into it.",
    "quiz.stage_score": "{name}: {right} of {total} right",
    "quiz.stage_score_carried": "{name}: {right} of {total} right ({carried} of them worked "
    "right from an earlier mistake)",
    "quiz.cell_head": "{cell} (head {head})",
    "quiz.score_title": "Score per stage",
    "quiz.col_stage": "stage",
    "quiz.col_score": "right",
    "quiz.col_cells": "cells",
    "quiz.legend": "✓ right, → right for its step, worked from an earlier mistake (counted "
    "right; its number differs from the true one), ✗ wrong, · missing",
    "quiz.verdict.right": "right",
    "quiz.verdict.carried": "carried",
    "quiz.verdict.wrong": "wrong",
    "quiz.verdict.missing": "missing",
    "quiz.cells_title": "Cells to look at again",
    "quiz.detail_wrong": "{cell}: you wrote {answer}, the answer is {expected}",
    "quiz.detail_carried": "{cell}: right for this step, worked from your own {origin} (a "
    "mistake made earlier); you wrote {answer}, the true value is {expected}",
    "quiz.detail_missing": "{cell}: no answer; the answer is {expected}",
    "quiz.stage_missing": "{key}: not answered",
    "quiz.all_right": "Every cell right: {total} of {total}.",
    "quiz.total": "Cells right: {right} of {total}.",
    "quiz.total_carried": "Cells right: {right} of {total}, {carried} of them worked right "
    "from an earlier mistake (such a cell's number differs from the true one).",
    "quiz.in_sheet": "in the answer sheet {origin}",
    "quiz.sheet_not_object": 'an answer sheet is a JSON object mapping stage ids ("k", '
    '"scores", "2/scores" for head 2) to matrices, not a {kind}',
    "quiz.sheet_key": "unknown stage {key!r}; this problem's stages are: {known}",
    "quiz.sheet_key_suggest": "unknown stage {key!r}: did you mean {suggestion!r}?",
    "quiz.sheet_key_head": "unknown stage {key!r}: this problem has {heads} {heads:head|heads}, "
    "and each head's stages are keyed by its number: did you mean {suggestion!r} (head 1; "
    "{last!r} for head {heads})?",
    "quiz.sheet_not_matrix": "{key} must be a matrix (a list of rows of numbers), not {value}",
    "quiz.sheet_shape": "{key} is {shape}, but that stage is {rule} = {expected} in this problem",
    "quiz.stage_head": "--stages {name}: the head before the slash is a whole number, as in "
    "2/scores",
    "quiz.stage_no_place": "--stages {name}: {sid} has no such step or block here; it has "
    "{places} (@s2: decode step 2, @b2: block 2 of keys)",
    "quiz.stage_no_places": "--stages {name}: this problem's {sid} has no decode steps or blocks "
    "of keys; choose it as {bare}",
    "quiz.stage_unknown": "--stages: no stage {name!r}; choose from {known} (2/scores: head 2 "
    "only)",
    "quiz.stage_unknown_suggest": "--stages: no stage {name!r}: did you mean {close!r}? Choose "
    "from {known} (2/scores: head 2 only)",
    "quiz.stage_one_head": "--stages {name}: this problem has a single head, so its stages "
    "carry no head number: write {sid}",
    "quiz.stage_no_head": "--stages {name}: head {head} is not in this problem, whose heads "
    "are 1 to {heads}",
    "quiz.stages_none": "--stages {names}: none of these is in this problem, which has: {known}",
    "quiz.no_problem": "no problem to work on: give --preset NAME, a JSON file (or - for "
    "standard input), or --random (try: qkvcalc quiz --preset doc)",
    "quiz.random_with_source": "--random makes its own problem: leave out {given}",
    "quiz.seed_without_random": "--seed and --size describe a random problem: add --random",
    "quiz.stdin_twice": "the problem and the answer sheet cannot both come from standard "
    "input: give one of them as a file",
    "quiz.json_needs_answers": "--format json is for graded answer sheets: add --answers FILE",
    "quiz.size": "--size {text!r}: write the number of tokens and the width as n,d (e.g. 3,2), "
    "each from 1 to {limit}",
    "quiz.seed": "--seed {seed}: a seed is a whole number from 0 to {limit}",
    # ---- the backward pass in the quiz and exports (issue 21) ----
    "help.quiz.backward": "Ask the backward pass instead of the forward one. By default it asks "
    "grad_v, grad_weights, the softmax backward's gradient of the logits, grad_scores, grad_q, "
    "grad_k and grad_wq, each that the problem has (under attend there is no grad_v: V does not "
    "reach that loss); --stages picks others, forward ones too. The gradient starts from the "
    "problem's grad_output, target or attend, which the quiz shows before the first question, "
    "with A, O and (when there is one) dO.",
    "hint.grad_v": "{cell} is column {i} of A (row {i} of Aᵀ) times column {j} of dO: "
    "Σₜ A[t,{i}]·dO[t,{j}], pair by pair, added.",
    "hint.grad_weights": "{cell} is row {i} of dO times row {j} of V (column {j} of Vᵀ): "
    "multiply them pair by pair and add.",
    "hint.grad_attend": "{cell} = −1 / A[{i},{j}] when key {j} is the target of query {i}, else 0.",
    "hint.grad_rowdot": "{cell} = Σⱼ A[{i},j]·dA[{i},j]: row {i} of A times row {i} of dA, "
    "pair by pair, added.",
    "hint.grad_softmax": "{cell} = A[{i},{j}]·(dA[{i},{j}] − r[{i}]): the row term r of row {i} "
    "comes off first.",
    "hint.grad_q_side": "{cell} is row {i} of d(Q·Kᵀ) times column {j} of {k}: multiply them "
    "pair by pair and add.",
    "hint.grad_k_side": "{cell} is column {i} of d(Q·Kᵀ) times column {j} of {q}: "
    "Σₜ d(Q·Kᵀ)[t,{i}]·{q}[t,{j}].",
    "hint.grad_weight": "{cell} is column {i} of {x} times column {j} of d{p} (the heads side by "
    "side): Σₜ {x}[t,{i}]·d{p}[t,{j}].",
    "hint.grad_weight_torch": "{cell} is column {i} of d{p} (the heads side by side) times "
    "column {j} of {x}: the layout is out × in, turned.",
    "hint.grad_input": "{cell} adds cell [{i},{j}] of every path: {terms}.",
    "hint.grad_input_one": "{cell} is cell [{i},{j}] of the one path there is: {terms}.",
    "mistake.grad_v_not_transposed": "This is A·dO; the output was A·V, so the gradient of V is "
    "the other factor turned: dV = Aᵀ·dO (column i of A against dO).",
    "mistake.softmax_back_no_row_term": "This is A ⊙ dA, as if each weight moved alone; raising "
    "one logit lowers every other weight of the row, so the row term comes off first: dS = A ⊙ "
    "(dA − r), rᵢ = Σⱼ Aᵢⱼ·dAᵢⱼ.",
    "mistake.grad_scale_missing": "{grad} was computed from the scaled scores' gradient; the "
    "scores were multiplied by the scale {scale}, so d(Q·Kᵀ) is that gradient times {scale} "
    "first.",
    "mistake.grad_path_forgotten": "One path is missing: {x} reaches the loss along every "
    "projection that reads it, and the chain rule adds them all; {path} was left out.",
    "hint.grad_back": "{cell} is cell [{i},{j}] of {rule}: the gradient {out} taken back "
    "through this step.",
    # ---- quiz, round two (issue 17): named mistakes, unreadable cells, hints ------------
    "mistake.weight_transposed": "These are {x}·{w}ᵀ; with row vectors {name} = {x}·{w}, with "
    "no transpose: column j of {w} makes column j of {name}.",
    "mistake.weight_torch_layout": "These are {x}·{w} as it is written; this problem gives its "
    "weights as PyTorch stores them (out×in, layout torch), so {name} = {x}·{w}ᵀ.",
    "mistake.kt_not_transposed": "This is K as it is; Kᵀ turns K on its side, so row j of K "
    "becomes column j of Kᵀ.",
    "mistake.k_not_transposed": "These are Q·K; a score compares query i with key j, q_i·k_j, "
    "that is row i of Q times column j of Kᵀ, so the scores are Q·Kᵀ.",
    "mistake.scores_transposed": "These are K·Qᵀ, the scores turned on their side; in Q·Kᵀ row "
    "i belongs to query i and column j to key j.",
    "mistake.scale_sqrt_d_model": "These are Q·Kᵀ / √d_model = Q·Kᵀ / {model_root}; the scale "
    "uses d_k = {d_k}, the width of a query and a key per head, so Q·Kᵀ / √d_k = Q·Kᵀ / {root}.",
    "mistake.scale_sqrt_d_model_or_d_k": "These are Q·Kᵀ / √d_model = Q·Kᵀ / {model_root} "
    "(here the same as dividing by d_k); the scale uses d_k = {d_k}, the width of a query and "
    "a key per head, and its square root: Q·Kᵀ / √d_k = Q·Kᵀ / {root}.",
    "mistake.scale_d_k": "These are Q·Kᵀ / d_k = Q·Kᵀ / {d_k}; the scale is the square root of "
    "d_k, so Q·Kᵀ / √d_k = Q·Kᵀ / {root}.",
    "mistake.scale_missing": "These are Q·Kᵀ, not scaled; every score is divided by "
    "√d_k = {root} (d_k = {d_k}).",
    "mistake.scale_missing_given": "These are Q·Kᵀ, not scaled; this problem gives "
    "scale = {scale}, and every score is multiplied by it.",
    "mistake.scale_multiplied": "These are Q·Kᵀ · √d_k; the scores are divided by "
    "√d_k = {root}, not multiplied.",
    "mistake.mask_missing": "The mask is left out; {count} query–key pairs are masked, and a "
    "masked score becomes −∞ before softmax, so its weight is 0.",
    "mistake.mask_inverted": "The mask is read the wrong way round; 1 / true means may attend "
    "(PyTorch's scaled_dot_product_attention) and 0 means masked (−∞).",
    "mistake.mask_inverted_causal": "The causal mask is turned around; query i may attend to "
    "keys 1…i (itself and the past), never to the future: the pairs above the diagonal become "
    "−∞.",
    "mistake.exp_not_shifted": "These are e^s; this stage subtracts each row's maximum first, "
    "e^(s − row max): the weights come out the same, and e^(s − row max) cannot overflow (each "
    "is at most 1), where e^s can.",
    "mistake.softmax_columns": "This is softmax down each column; softmax runs along each row "
    "(one query over all its keys), so every row of A sums to 1.",
    "mistake.softmax_columns_empty": "This is softmax down each column; softmax runs along each "
    "row (one query over all its keys), so every row of A sums to 1, except a row whose keys are "
    "all masked, which is 0 throughout (this A has such a row).",
    "mistake.heads_averaged": "This averages the {heads} heads; their outputs are laid side by "
    "side (concatenated, head 1's columns first), so concat is {shape}.",
    "mistake.softcap_inner_missing": "These are c·tanh(S) = {cap}·tanh(S); the score is "
    "divided by c inside the tanh, c·tanh(S / c), so that a small score passes almost "
    "unchanged.",
    "mistake.softcap_outer_missing": "These are tanh(S / c), between −1 and 1; the cap "
    "multiplies the tanh by c = {cap} again, c·tanh(S / c), so the logits lie between −c and c.",
    "mistake.rope_other_pairing_half": "This turns neighbouring dimensions together (2i with "
    '2i+1); this problem\'s RoPE pairs dimension i with i + {half} (style "half", rotate_half).',
    "mistake.rope_other_pairing_pairs": "This pairs dimension i with i + {half} (rotate_half); "
    "this problem's RoPE turns neighbouring dimensions together, 2i with 2i+1 (style "
    '"pairs").',
    "mistake.rope_turned_back": "This turns each pair by −φ; RoPE turns it forward by "
    "φ = position × ω: a′ = a·cos φ − b·sin φ, b′ = b·cos φ + a·sin φ.",
    "mistake.alibi_sign": "These are +slope·|i − j|; ALiBi subtracts the distance: "
    "B = −{slope}·|i − j|.",
    "mistake.alibi_signed_distance": "These are −slope·(i − j), without the absolute value; "
    "ALiBi takes the distance |i − j|, so a key after its query is penalised as much as one "
    "the same distance before it.",
    "mistake.sink_max_forgotten": "These are shifted by the scores' maximum alone; with a sink "
    "the row maximum is taken over the scores and the sink together, m = max(max_j s_j, σ), so "
    "that e^(σ − m) is at most 1 too (the weights come out the same).",
    "mistake.sink_left_out": "This is the softmax without the sink; the sink's e^(σ − m) joins "
    "each row's sum, Σ_j e^(s_j − m) + e^(σ − m), so a row's weights add up to less than 1 "
    "(the sink takes the rest).",
    "mistake.norm_weight_missing": "These are x / RMS(x) without the weight; RMSNorm then "
    "multiplies each dimension j by its weight w_j.",
    "mistake.norm_sum_not_mean": "These divide by √(Σ x²), the row's length; RMSNorm divides by "
    "the root of the mean, √(mean(x²) + ε), the mean over d_k = {d_k} {d_k:dimension|dimensions}.",
    "quiz.mistakes_title": "Mistakes recognised",
    "quiz.mistake_line": "{stage}: {text}",
    "quiz.verdict.unreadable": "unreadable",
    "quiz.detail_unreadable": "{cell}: {text} cannot be read ({reason}); the answer is {expected}",
    "quiz.legend_unreadable": "? unreadable",
    "answer.comma_ambiguous": "{field}: {text!r} could be {decimal} (a decimal comma) or "
    "{thousands} (a thousands separator); write {decimal} or {thousands}",
    "quiz.skipped": "{cell} skipped: it is {expected}.",
    "quiz.hint": "Hint: {rule}",
    "quiz.interrupted_score": "Stopped. The score so far:",
    "hint.proj": "{cell} is row {i} of {x} times column {j} of {w}: multiply them pair by pair "
    "and add.",
    "hint.proj_bias": "{cell} is row {i} of {x} times column {j} of {w}, multiplied pair by "
    "pair and added, plus entry {j} of {b}.",
    "hint.kt": "{cell} is K[{j},{i}]: Kᵀ swaps rows and columns.",
    "hint.scores": "{cell} = q_{i}·k_{j}: row {i} of Q times column {j} of Kᵀ (row {j} of K), "
    "multiplied pair by pair and added.",
    "hint.scaled": "{cell} = Q·Kᵀ[{i},{j}] {op}.",
    "hint.masked": "{cell} = {src}[{i},{j}] where the mask lets query {i} see key {j} (1), and −∞ "
    "where it does not (0).",
    "hint.exp": "{cell} = e^({src}[{i},{j}] − the largest entry of row {i} of {src}).",
    "hint.formula": "{cell} is cell [{i},{j}] of {formula}.",
    "hint.x_pe": "{cell} = X[{i},{j}] + PE[{i},{j}].",
    "hint.rmsnorm": "{cell} = {src}[{i},{j}] / √(mean of the squares of row {i} of {src} + ε) "
    "× w[{j}].",
    "hint.rope": "{cell}: dimension {j} of row {i} of {src}, turned with its partner dimension "
    "by φ = position of token {i} × its pair's frequency: a·cos φ − b·sin φ (first of the "
    "pair) or b·cos φ + a·sin φ (second).",
    "hint.alibi": "{cell} = −slope × |position of query {i} − position of key {j}|.",
    "hint.biased": "{cell} = S[{i},{j}] + B[{i},{j}].",
    "hint.capped": "{cell} = c·tanh({src}[{i},{j}] / c), c = {cap}.",
    "hint.sink_exp": "{cell} = e^({src}[{i},{j}] − m) with m = max(row {i} of {src}, σ); the "
    "last column is e^(σ − m).",
    "hint.weights": "{cell} = E[{i},{j}] / (the sum of row {i} of E).",
    "hint.output": "{cell} is row {i} of A times column {j} of V: multiply them pair by pair "
    "and add.",
    "hint.concat": "{cell} is row {i}, column {c} of head {h}'s output: the heads are laid side "
    "by side.",
    "hint.final": "{cell} is row {i} of concat times column {j} of W_O: multiply them pair by "
    "pair and add (then add b_O[{j}] if the problem has one).",
    "hint.final_concat": "{cell} = concat[{i},{j}]: with no W_O, the joined heads are the output.",
    "quiz.template_with_answers": "--template prints an empty answer sheet, so it does not "
    "combine with --answers: leave out one of them",
    "help.quiz.template": "Print an empty answer sheet for the problem (the stages of "
    "--stages), as JSON: fill it in and grade it with --answers.",
    "help.explain.random": "A fresh problem of small integers: the same one qkvcalc quiz "
    "--random gives for the same --seed and --size.",
    "help.explain.seed": "With --random: the same problem every time.",
    "help.explain.size": "With --random: tokens,width (default 3,2).",
    "explain.random_seed": "A random problem, seed {seed}. The same one again: qkvcalc explain "
    "--random --seed {seed} --size {size}; as a quiz: qkvcalc quiz --random --seed {seed} "
    "--size {size}",
    "new.kv_heads": "Number of key/value heads G; it divides H = {heads}, and fewer than H "
    "share K and V between query heads{default}:",
    "new.kv_heads_bad": "{value} does not divide H = {heads}: G is one of {divisors}.",
    "new.wo_ask": "W_O, the output projection applied after the heads are joined: give it? [Y/n]",
    "new.intro": "A new attention problem, step by step. Numbers may be written 3, -0.5, 1/2 "
    "or sqrt(2); Enter takes the value in [brackets]; Ctrl-C quits without saving.",
    "new.tokens": "Number of tokens n{default}:",
    "new.names": "Names of the tokens (n = {n}), split by spaces [{default}]:",
    "new.names_count": "The number of names is {count}, but n = {n}: give one name per token, "
    "or none for the default names.",
    "new.d_model": "d_model, the width of each token's vector{default}:",
    "new.d_k": "d_k, the width of a query and a key (per head){default}:",
    "new.d_v": "d_v, the width of a value (per head){default}:",
    "new.heads": "Number of heads H{default}:",
    "new.whole_bad": "{value!r} is not a whole number from {low} to {high}.",
    "new.matrix": "{matrix} is {rule} = {rows}×{cols}: type it one row at a time.",
    "new.row": "{matrix} row {row} of {rows}, {cols} wide:",
    "new.row_length": "{matrix} row {row} is {length} long, but {matrix} is {rule} = "
    "{rows}×{cols}: every row needs {cols}. Type the row again.",
    "new.cell_bad": "{reason}. Type the row again.",
    "new.mask": "Mask: none, causal, or matrix (type it row by row) [none]:",
    "new.mask_bad": "{value!r}: type none, causal or matrix.",
    "new.mask_row": "mask row {row} of {rows}, {cols} wide (1 = may attend, 0 = masked):",
    "new.mask_row_bad": "mask row {row} needs one entry per key (m = {cols}), each 1 (may "
    "attend) or 0 (masked). Type the row again.",
    "new.yes_words": "y,yes",
    "new.no_words": "n,no",
    "new.yes_no": "Type y or n.",
    "new.overwrite": "{path} exists. Replace it? [y/N]",
    "new.not_saved": "Nothing written.",
    "new.saved": "Saved to {path}.",
    "new.explain_now": "Explain it now? [Y/n]",
    "new.explain_later": "Explain it any time: qkvcalc explain {path}",
    "new.ended": "the input ended before the problem was complete; nothing was saved",
    # ---- every line adds up (issue 25) ----------------------------------------------------
    "note.geometry_approx": "One score as lengths and an angle: {query}·{key} = "
    "|q|·|k|·cos θ = {q_norm} × {k_norm} × {cos} ≈ {value}.",
    "ui.softmax_row_terms": "row {row} ({token}): max = {max}; sum of exponentials = "
    "{terms}{eq}{sum}",
    # ---- exact (issue 5) ----------------------------------------------------------------
    "note.exact_surd": "√{d_k} is irrational, so each scaled score is kept exactly as a whole "
    "number over a square root (such as 7/√2), beside its decimal. To rationalise it as at "
    "school, multiply top and bottom by the root: 7/√2 = 7√2/2, and 7/√8 = 7√8/8 = 7√2/4.",
    "note.exact_scale_irrational": "The given scale {scale} is irrational, so the scaled "
    "scores are shown in decimals.",
    "note.exact_stops_sinks": "Decimals from here on. Each e^(s − m), the sink's e^(σ − m) "
    "included, is exactly 1 where the exponent is 0 (and 0 where the score is masked) and "
    "irrational otherwise: e^a is transcendental for every algebraic a ≠ 0 (the "
    "Lindemann–Weierstrass theorem).",
    "note.exact_stops": "Decimals from here on. e^(s − max) is exactly 1 where the score "
    "equals its row's maximum (and 0 where it is masked); every other one is irrational: "
    "s − max is then an algebraic number other than 0 (such as −3/√2), and e^a is "
    "transcendental for every algebraic a ≠ 0 (the Lindemann–Weierstrass theorem). A weight "
    "is still rational when all unmasked scores of its row are equal, 1/k each for k keys "
    "(1 for a single key, 1/2 each for two), though the tables show it in decimals.",
    "note.exact_partial": "Cells that depend on an irrational input (a square root) are shown "
    "in decimals.",
    "note.exact_skipped": "Exact fractions left out: this problem needs {count} "
    "multiplications of fractions, more than {limit}; --exact is for problems small enough "
    "to work by hand.",
    "note.exact_skipped_digits": "Exact fractions left out: with these numbers a cell would "
    "grow to about {digits} digits (numerator and denominator), more than {limit}; --exact is "
    "for numbers a person can read.",
    "note.exact_skipped_work": "Exact fractions left out: {count} multiplications of fractions "
    "of up to about {digits} digits would take too long; --exact is for problems small "
    "enough to work by hand.",
    # ---- limits and safety (issue 6) ----------------------------------------------------
    "limits.input_elements": "{field} is {rows}×{cols}, which brings the input to {count} "
    "numbers, more than the limit of {limit}; raise it with --max-elements if you mean it",
    "limits.stage_elements": "with H = {heads}, n = {n} and m = {m}, the stages would hold "
    "{count} numbers ({gigabytes} GB: every head keeps its {n}×{m} scores, and working one out "
    "takes four more), more than the limit of {limit}; use fewer tokens or heads, or raise the "
    "limit with --max-elements if you mean it",
    "number.too_large": "{field}: {text} is too large: float64 numbers stop near 1.8e308",
    "input.json_long_number": "not valid JSON here: a number of more than {limit} digits "
    "(float64 keeps about 17)",
    # ---- command-line help ----------------------------------------------------------------
    "help.app": "A step-by-step calculator for Transformer attention: every stage, every "
    "cell's arithmetic. Start with: qkvcalc explain --preset doc",
    "help.version": "Show the version and exit.",
    "help.lang": "en or ko (default: from QKVCALC_LANG, LC_ALL, LANG).",
    "help.no_color": "No colours (NO_COLOR works too).",
    "help.panel.source": "Where the problem comes from",
    "help.panel.inline": "Matrices and sizes typed here",
    "help.panel.modern": "Today's attention: positions, features, decoding, tiles",
    "help.panel.show": "What is shown, and how",
    "help.panel.display": "Language and colours",
    "help.panel.limits": "How much input is read, at most",
    "help.panel.view": "One stage at a time, some stages, one head",
    "help.panel.given": "The tokens the model reads",
    "help.panel.run": "How the model runs, and where the result goes",
    "help.panel.arguments": "Arguments",
    "help.panel.options": "Options",
    "help.panel.commands": "Commands",
    "help.panel.at": "The layer",
    "help.panel.shown": "What is shown",
    "help.panel.asked": "What the quiz asks, and how it reports",
    "help.panel.grads": "The backward pass",
    "help.panel.descent": "Gradient descent",
    "help.panel.precision": "Precision: the dtype the hardware computes in",
    "help.panel.checked": "What is checked: your code, or your stages against a problem",
    "help.panel.runs": "How your code is run, and how the verdict is written",
    "help.panel.serve": "Saving, and serving the studio to a browser",
    "help.explain": "Compute attention for a problem and show every stage, with each cell's "
    "arithmetic.",
    "help.explain.source": "A JSON (or .npz) file of the input format, or - for standard input "
    "(piped input is read when no other input is given).",
    "help.explain.preset": "A bundled preset (qkvcalc presets lists them).",
    "help.explain.x": 'Input X, rows split by ";": "1 2; 0 1", or a .npy file.',
    "help.explain.wq": "W_Q, inline or a .npy file (as --x).",
    "help.explain.wk": "W_K, inline or a .npy file (as --x).",
    "help.explain.wv": "W_V, inline or a .npy file (as --x).",
    "help.explain.wo": "W_O, inline (the output projection that combines the heads).",
    "help.explain.tokens": 'Token names, split by spaces: "I love cats".',
    "help.explain.mask": 'none, causal, or a 0/1 matrix "1 0; 1 1" (1 = may attend).',
    "help.explain.heads": "Number of heads H.",
    "help.explain.kv_heads": "Key/value heads G (grouped-query attention).",
    "help.explain.scale": "The factor the scores are multiplied by (default 1/√d_k): 0.5, "
    "1/sqrt(8). A scale c acts as a softmax temperature 1/c: smaller flattens the weights, "
    "larger sharpens them.",
    "help.explain.layout": "rows: Q = X·W_Q; torch: weights as PyTorch stores them (out×in).",
    "help.explain.positions": 'Query positions, split by spaces: "0 1 2" (default 0…n−1).',
    "help.explain.causal_align": "top-left (default, as is_causal=True) or bottom-right (the "
    "last query at the last key, as when decoding with a cache).",
    "help.explain.chunk": "Chunked attention C (Llama 4): each query sees only the keys of its "
    "own chunk of C positions, up to itself (needs --mask causal).",
    "help.explain.window": "Sliding window W: each query sees its W most recent positions, "
    "its own included (needs --mask causal).",
    "help.explain.positional": "sinusoidal: add the paper's position encoding to X.",
    "help.explain.rope": "Rotary position embedding (RoPE) on q and k, with this theta "
    "(10000 in LLaMA).",
    "help.explain.rope_style": "half: dimension i with i + R/2 (LLaMA, GPT-NeoX); pairs: 2i "
    "with 2i+1 (GPT-J).",
    "help.explain.rope_dims": "How many dimensions of each head rotate (even; default d_k).",
    "help.explain.alibi": "Add ALiBi's distance penalty, with the paper's slopes per head.",
    "help.explain.softcap": "Softcap the scores: c·tanh(s/c) (Gemma 2 uses 50).",
    "help.explain.format": "What to print (default: table, or from --output's extension).",
    "help.explain.output": "Write to this file instead of standard output.",
    "help.explain.detail": "full: each cell's arithmetic where it fits; brief: tables only.",
    "help.explain.precision": "Decimals shown.",
    "help.explain.target": "A target output T (n × d_out, as --x): --backward starts from L = "
    "½·Σ(O − T)².",
    "help.explain.grad_output": "dL/dO given directly (n × d_out, as --x), as out.backward(grad) "
    "takes it: --backward starts from it.",
    "help.explain.attend": 'The key each query should attend to, 1-based, one per query ("3 1 '
    '-": - for none): --backward starts from L = −Σᵢ log A[i, tᵢ], a teaching shortcut (a real '
    "model is never told where to look; --target puts the loss on the output).",
    "help.explain.backward": "After the forward stages, the backward pass: every gradient from "
    "the loss (the problem's grad_output, target or attend) back to X and the weights (W_Q, W_K, "
    "W_V, W_O, the biases, and a layer's own: MLA's latents', a linear layer's), or to the Q, K "
    "and V given.",
    "help.explain.dtype": "Compute every stage as the hardware does in this dtype: float32, "
    "bfloat16, float16, float8_e4m3fn or float8_e5m2 (float8 stored with one scale per tensor "
    "under --policy eager, a plain cast under naive), each cell beside its float64 twin and its "
    "error in units in the last place.",
    "help.explain.policy": "With --dtype: whose rounding. eager (default): transformers' eager "
    "attention (float32 sums, softmax in float32; float8 with one scale per tensor, as FP8 "
    "kernels); sdpa: torch's scaled_dot_product_attention on the CPU (its flash kernel where d_k "
    "= d_v, else its math kernel); naive: every op in the dtype, no upcast and no scale.",
    "precision.policy_without_dtype": "--policy {policy} says how a low-precision dtype rounds: "
    "give --dtype too (float32, bfloat16, float16, float8_e4m3fn or float8_e5m2)",
    "help.explain.exact": "Show exact fractions where the numbers stay rational.",
    "help.explain.worksheet": "A worksheet: the inputs filled in, every computed cell blank (no "
    "arithmetic, no notes that tell a result). The answer key is the same command without it.",
    "help.explain.max_bytes": "Refuse inputs larger than this.",
    "help.explain.max_elements": "Refuse problems whose inputs and stages hold more numbers "
    "than this.",
    "help.explain.stages": "Show only these stages, by id: weights,output "
    "(in the run's order; --format json lists every id).",
    "help.explain.head": "Show only head H's stages (1…H), with those every head shares.",
    "help.presets": "List the bundled presets, or print one as JSON.",
    "help.presets.list": "List the presets with a one-line description.",
    "help.presets.show": "Print one preset as JSON: a template to copy and edit.",
    "help.presets.name": "The preset's name.",
    "help.quiz": "Work out attention by hand: each cell is checked, a mistake is traced to "
    "where it began.",
    "help.quiz.source": "A JSON file of the input format, or - for standard input.",
    "help.quiz.preset": "A bundled preset (qkvcalc presets lists them).",
    "help.quiz.random": "A fresh problem of small integers.",
    "help.quiz.seed": "With --random: the same problem every time.",
    "help.quiz.size": "With --random: tokens,width (default 3,2).",
    "help.quiz.stages": "The stages to work out, in order: q,k,v,kt,scores,scaled,masked,exp,"
    "weights,output (2/scores: head 2 only). Default: q,k,v,scores,scaled,weights,output.",
    "help.quiz.answers": "Grade an answer sheet without questions: a JSON file mapping stage "
    'ids ("k", "2/scores") to matrices, or - for standard input.',
    "help.quiz.format": "With --answers: a table, or JSON for autograders.",
    "help.quiz.precision": "Decimals an answer must agree to (half a unit of the last).",
    "help.new": "Type a problem in step by step, each row checked as it comes; save it as JSON.",
    "help.new.file": "Save the problem here (default: print it to standard output).",
    # ---- modern attention: positions, windows, RoPE, ALiBi, biases, softcap, q/k norm ----
    "stage.pe.title": "Position encoding",
    "stage.pe.why": "Attention itself ignores order: shuffle the tokens and the outputs are "
    "only shuffled. Adding a vector that depends on each token's position to X gives the "
    "layer something to tell first from last.",
    "stage.x_pe.title": "Input plus position",
    "stage.x_pe.why": "The position encoding is added to X, cell by cell, before the "
    "projections: from here on every query, key and value carries its token's position.",
    "stage.q_norm.title": "Query norm (RMSNorm)",
    "stage.q_norm.why": "Each head's query is rescaled to a root mean square of about 1, then "
    "multiplied by a learned weight per dimension. Bounding the size of q keeps the scores "
    "from growing without limit during training (Qwen3, Gemma 3).",
    "stage.k_norm.title": "Key norm (RMSNorm)",
    "stage.k_norm.why": "The same for each head's key: x / √(mean(x²) + ε) · w, row by row.",
    # ---- the norm on V (qkvcalc/ops/v_norm.py) ----
    "stage.v_norm.title": "Value norm (RMSNorm without a weight)",
    "stage.v_norm.why": "Gemma 3n and Gemma 4 rescale each head's value rows too: v / √(mean(v²) + "
    "ε), row by row, with no learned weight, so every token passes on a value of root mean square "
    "just under 1 and none is louder than another (unless its row is tiny next to ε: a row of "
    "zeros stays 0). The weights then mix these normalised values.",
    "hint.v_norm": "{cell} = {src}[{i},{j}] / √(mean of the squares of row {i} of {src} + ε).",
    "note.v_norm": "Row by row: v / √(mean(v²) + ε), with ε = {eps} and no weight.",
    "ui.variant.v_norm": "a norm on V (ε = {eps})",
    "mistake.v_norm_sum_not_mean": "These divide by √(Σ v²), the row's length; the norm on V "
    "divides by the root of the mean, √(mean(v²) + ε), the mean over d_v = {d_v} "
    "{d_v:dimension|dimensions}.",
    "v_norm.value": 'v_norm must be true (ε = 1e-6) or an object such as {{"eps": 1e-6}}, not '
    "{value}",
    "v_norm.tiles_backward": "The norm on V (v_norm) is not planned in tiles with --backward yet: "
    "leave out --tiles (the whole run shows its gradient) or --backward.",
    "v_norm.decode": "The norm on V (v_norm) is not computed step by step with a KV cache: leave "
    "out --decode (the whole run shows it).",
    "stage.grad_v_norm.title": "Backward: gradient of the normalised values",
    "stage.grad_v_norm.why": "The output was A·V_norm, so the normalised values' gradient is "
    "Aᵀ·dO: each value row collects the output gradients of the queries that read it, weighted "
    "by how much they read it.",
    "stage.grad_back.v_rmsnorm.title": "Backward through the norm on V",
    "stage.grad_back.v_rmsnorm.why": "The norm multiplied each value row by "
    "ρ = 1/√(mean(v²) + ε). Its backward has two parts: the gradient scaled the same way, ρ·g, "
    "minus the part that would only change the row's length, which the norm undoes.",
    "stage.q_rot.title": "Rotary position (RoPE) on the queries",
    "stage.q_rot.why": "RoPE turns each pair of a query's dimensions by an angle: its "
    "position times that pair's frequency. Nothing is added to X; the position lives in the "
    "direction of q and k.",
    "stage.k_rot.title": "Rotary position (RoPE) on the keys",
    "stage.k_rot.why": "The keys are turned the same way by their own positions. Turning q by "
    "angle a and k by angle b changes their dot product exactly as turning k alone by b − a "
    "would, so the score depends on the distance between the two positions, not on where "
    "they are.",
    # ---- RoPE on the values and back on the output (qkvcalc/ops/vo_rope.py) ----
    "stage.v_rot.title": "Rotary position (RoPE) on the values",
    "stage.v_rot.why": "The values are turned as the keys are, each at its own key's position "
    "(as in DeepSeek-V4, where one key/value head is both K and V; here they may differ). Each "
    "head's output is turned back at its query's position after A·V, so what a value brings to "
    "the output's rotary columns depends on how far its key is from the query, not on where the "
    "two are.",
    "stage.out_back.title": "The output turned back (RoPE by −i)",
    "stage.out_back.why": "Each head's output row is turned back by its query's position i: the "
    "rotary columns of O_i = Σⱼ Aᵢⱼ·R(j)·vⱼ become Σⱼ Aᵢⱼ·R(j − i)·vⱼ, every value turned by "
    "the distance j − i between its key and the query. The other columns pass through.",
    "hint.vo_rope_back": "{cell}: dimension {j} of row {i} of {src}, turned with its partner "
    "dimension by φ = −(position of token {i}) × its pair's frequency: a·cos φ − b·sin φ (first "
    "of the pair) or b·cos φ + a·sin φ (second).",
    "note.vo_rope_v": "The first {dims} of the values' {d_v} columns turn as the keys' do, each "
    "row at its key's position ({positions}); the others pass through.",
    "note.vo_rope_back": "The first {dims} columns of each output row turn back by its query's "
    "position ({positions}), the angle −position × ω; the others pass through.",
    "note.vo_rope_relative": "So a value at key position j reaches query i turned by R(j)·R(−i) = "
    "R(j − i): the output's rotary columns mix the values by their relative position j − i, as "
    "Q·Kᵀ does.",
    "ui.variant.vo_rope": "RoPE on V, turned back on the output",
    "mistake.vo_rope_not_turned_back": "This is A·V_rot as it comes: the output must still be "
    "turned back by its query's position, by −i, so that each value is turned by j − i.",
    "mistake.vo_rope_turned_forward": "This turns the output by +i; it is turned back, by −i: "
    "R(−i)·R(j) = R(j − i), the relative position.",
    "stage.grad_v_rot.title": "Backward: gradient of the turned values",
    "stage.grad_v_rot.why": "The output was A·V_rot, so the turned values' gradient is Aᵀ·dO: "
    "each value row collects the output gradients of the queries that read it, weighted by how "
    "much they read it. The rope op's backward then turns it back by its key's position.",
    "stage.grad_back.turn_back.title": "Backward through the output's turn back",
    "stage.grad_back.turn_back.why": "The output was turned back by −i·ω, pair by pair. A "
    "rotation's transpose is the rotation the other way, so the gradient is turned forward by "
    "+i·ω: the same angles, the other way.",
    "vo_rope.value": "vo_rope must be true (the values turned as the keys, the output turned "
    "back) or false, not {value}",
    "vo_rope.needs_rope": "vo_rope turns the values and the output by the problem's rotation: "
    'give rope too (for example "rope": {{"style": "pairs", "dims": 2}}).',
    "vo_rope.d_v": "vo_rope turns the first {dims} columns of each head's values (rope's dims), "
    "but a head has d_v = {d_v}: give rope dims of at most {d_v}.",
    "vo_rope.tiles_backward": "RoPE on the values (vo_rope) is not planned in tiles with "
    "--backward yet: leave out --tiles (the whole run shows its gradients) or --backward.",
    "vo_rope.decode": "RoPE on the values (vo_rope) is not computed step by step with a KV cache: "
    "leave out --decode (the whole run shows it).",
    # ---- compressed keys (qkvcalc/ops/compress.py) ----
    "stage.comp_kv.title": "Compressed entries: the values to pool",
    "stage.comp_kv.why": "The entries are made from X by a projection of their own, W_C: each "
    "token's row is what it brings to the entry its window makes. An entry sums up a window of m "
    "tokens (with overlapping windows, halves of two), and every head reads it as one more key "
    "and value, so a long sequence costs fewer keys.",
    "stage.comp_gate.title": "Compressed entries: the gates",
    "stage.comp_gate.why": "A second projection of X, W_CG, gives each token a gate in each "
    "channel: how much that token counts in its entry, once its position's bias is added and the "
    "gates of its window go through a softmax.",
    "stage.comp_weights.title": "Compressed entries: each token's share",
    "stage.comp_weights.why": "For each entry, each channel apart, a softmax over its slots (the "
    "tokens of its window; with overlapping windows, of its two): e^(z + b) over the sum of those "
    "of its slots. The shares of one entry add up to 1 in every channel, so the entry is a "
    "weighted average of its tokens, channel by channel.",
    "stage.comp_pooled.title": "Compressed entries: pooled",
    "stage.comp_pooled.why": "Each entry is its slots' rows of C_E, each times its share, "
    "summed channel by channel: one row for a window of tokens.",
    "stage.comp_norm.title": "Compressed entries: RMSNorm",
    "stage.comp_norm.why": "Each entry is divided by its root mean square and multiplied by the "
    "norm's weight, as the tokens' own key/value rows are.",
    "stage.comp_rot.title": "Compressed entries: rotary position (RoPE)",
    "stage.comp_rot.why": "Each entry is turned as a key is, at the position of its window's "
    "first token, w·m, so that Q·Kᵀ sees how far the query is from where the window starts.",
    "stage.k_more.title": "The keys with the entries",
    "stage.k_more.why": "The entries go under the tokens' keys: every head's scores get one "
    "column per entry, and the mask says which entries each query may read.",
    "stage.v_more.title": "The values with the entries",
    "stage.v_more.why": "The same entries go under the values (an entry is its own key and its "
    "own value), so a query's weight on an entry brings that entry's row into its output.",
    "hint.comp_weights": "{cell} = e^(this slot's gate + its position's bias − the largest of "
    "its entry's) / the sum of those over the entry's slots, in this channel.",
    "hint.comp_pooled": "{cell}: the shares of entry {i}'s slots in channel {j}, each times the "
    "slot's value, summed.",
    "hint.comp_more": "{cell}: row {i} of {src} for a token's row; an entry's row after them.",
    "note.comp_kv": "One entry per {m} {m:token|tokens}, {width} {width:number|numbers} wide; "
    "entries: ⌊{n}/{m}⌋ = {count} (tokens after the last whole window feed none yet).",
    "note.comp_kv_overlap": "Two halves of {width} {width:column|columns}, [Ca | Cb]: an entry "
    "pools its own window's Cb half and the window before's Ca half; one entry per {m} "
    "{m:token|tokens}, entries: ⌊{n}/{m}⌋ = {count}.",
    "note.comp_gate": "The gates have the columns of the values they pool: one gate per token "
    "and channel.",
    "note.comp_weights": "Each window of {m} {m:row|rows} is one entry's: row t feeds C⌈t/{m}⌉, "
    "column by column; the bias added is B's row for the token's place in its window.",
    "note.comp_weights_overlap": "In the Cb half's columns row t feeds its own window's entry, "
    "C⌈t/{m}⌉; in the Ca half's, the next window's, C(⌈t/{m}⌉ + 1), and 0 where there is none. An "
    "entry's softmax runs over its 2·{m} slots in a channel ({m} for C1).",
    "note.comp_pooled": "Entry w sums its slots' shares times their values, channel by channel.",
    "note.comp_rot": "The first {dims} columns of each entry turn at the position of its "
    "window's first token (C1 at 0, each next entry {m} further on) with the problem's rotary "
    "frequencies; the others pass through.",
    "note.comp_more": "{side}' = the tokens' rows, then one row per entry (entries: {count}): "
    "every head reads the same entries, as keys and as values.",
    "note.comp_visible": "The entries' columns: a query at position p (t1 at 0) may read an entry "
    "only once the entry's whole window is at or before p, the entries C1 to C⌊(p + 1)/{m}⌋ (none "
    "while p + 1 < {m}); the window and the causal mask hold for the tokens' columns.",
    "note.exact_stops_comp": "Decimals from here on: a token's share in its entry is an e^x over "
    "a sum of them, which leaves the fractions.",
    # the backward through the entries (--backward, train)
    "stage.grad_v_more.title": "Backward: gradient of the values with the entries",
    "stage.grad_v_more.why": "The head's output was A·V', so dV' is Aᵀ times that output's "
    "gradient: each row of V', a token's or an entry's, collects the output gradients of the "
    "queries that read it, weighted by how much they read it.",
    "stage.grad_stack_rows.title": "Backward: the tokens' rows of the gradient",
    "stage.grad_stack_rows.why": "K' (or V') put the tokens' rows above the entries' rows, so the "
    "gradient of the tokens' part is the first rows of d(K') (or d(V')) as they are; the "
    "entries' rows go back to the entries.",
    "stage.grad_comp_entries.title": "Backward: gradient of the entries",
    "stage.grad_comp_entries.why": "Every head reads the same entries as the last rows of its "
    "keys K' and of its values V' (an entry is its own key and its own value), so the entries "
    "reach the loss through every head's dK' and dV': their gradient adds those rows of all of "
    "them (the keys' alone under a loss on the weights, which the values do not reach).",
    "note.grad_shared_rows": "{x} is rows {rows} of {names} in each head, so its gradient adds "
    "those rows of all {count} {count:share|shares}.",
    "stage.grad_back.comp_norm.title": "Backward through the entries' RMSNorm",
    "stage.grad_back.comp_norm.why": "The norm multiplied each entry by ρ = 1/√(mean(x²) + ε) and "
    "by w. Its backward has two parts: the gradient scaled the same way, ρ·(w ⊙ g), minus the "
    "part that would only change the entry's length, which the norm undoes.",
    "stage.grad_comp_weights.title": "Backward: gradient of each token's share",
    "stage.grad_comp_weights.why": "An entry was Σ_t P ⊙ C_E over its slots, so a share's gradient "
    "is its entry's gradient in that channel times the slot's value: dP = dE ⊙ C_E.",
    "stage.grad_comp_kv.title": "Backward: gradient of the pooled values C_E",
    "stage.grad_comp_kv.why": "The same product seen from the values: dC_E = dE ⊙ P, each token's "
    "value gets its entry's gradient times its share (0 for a token in no entry's window).",
    "note.comp_grad_spread": "Each slot takes the gradient of the entry it feeds (its row of dE, "
    "in the slot's channel), the entry the pool's note names for it; a slot that feeds none "
    "gets 0.",
    "hint.comp_grad_spread": "{cell} = the gradient {src} of the entry this slot feeds, in its "
    "channel, times {other} of the slot.",
    "stage.grad_back.pool_softmax.title": "Backward through the windows' softmax",
    "stage.grad_back.pool_softmax.why": "Each entry's shares are a softmax over its slots, channel "
    "by channel. As for attention's softmax, dZ = P ⊙ (dP − r), r the sum of P·dP over the "
    "entry's slots in that channel; a token in no entry's window gets 0.",
    "stage.grad_wc.title": "Gradient of W_C",
    "stage.grad_wc.why": "C_E = X·W_C, so dW_C = Xᵀ·dC_E: the compressor's values learn from what "
    "every head asked of the entries, back through their turn, their norm and the pool.",
    "stage.grad_wcg.title": "Gradient of W_CG",
    "stage.grad_wcg.why": "Z = X·W_CG, so dW_CG = Xᵀ·dZ: the gates learn how much each token "
    "should count in its entry.",
    "stage.grad_comp_bias.title": "Gradient of the position bias B",
    "stage.grad_comp_bias.why": "Row r of B was added to the gate of the slot at place r of every "
    "window, so row r of dB adds the rows of dZ at that place, over the windows.",
    "note.comp_grad_bias": "{count} {count:window|windows} of {m} rows: row r of dB adds dZ's "
    "rows r, r + {m}, … (a token after the last whole window adds nothing).",
    "stage.grad_comp_norm_weight.title": "Gradient of the entries' norm weight",
    "stage.grad_comp_norm_weight.why": "E_norm = E·ρ·w, entry by entry, so each weight wⱼ "
    "collects, over the entries, dE_norm[w, j] times the normalised cell E[w, j]·ρ_w.",
    "note.comp_grad_topk": "This mask holds the indexer's choice of entries (each query's "
    "top_k = {top_k} of those it may see, or all of them when fewer) as fixed numbers: a top-k "
    "is a choice, with no gradient, so the backward pass does not go through the indexer. Its "
    "weights (W_IC, W_IG, B_I, its norm's weight, W_IQ, W_w) get no gradient from this loss, "
    "and X and C_Q get no share of the gradient through it.",
    "train.comp_index_fixed": "The indexer's weights over the entries (W_IC, W_IG, B_I, its "
    "norm's weight, W_IQ, W_w) are not moved: the loss gives them no gradient (its top-k is a "
    "choice, held fixed as a mask in the backward pass). Each step trains the rest, the "
    "entries' W_C, W_CG, B and w_E among them, and the indexer chooses each query's entries "
    "again with its weights as given.",
    "stage.grad_x.comp.title": "Backward: gradient of the input X",
    "stage.grad_x.comp.why": "X reaches the loss by every projection that reads it, the "
    "compressor's W_C and W_CG among them: each entry pooled from X is a key and a value of "
    "every head. The multivariate chain rule adds the paths, as the formula lists them "
    "(dC_E·W_Cᵀ + dZ·W_CGᵀ beside the others). This is what flows on to the layer below.",
    "ui.variant.compress": "compressed keys: one entry per {m} {m:token|tokens}, after the "
    "tokens' keys",
    "ui.variant.compress_overlap": "compressed keys: one entry per {m} {m:token|tokens}, after "
    "the tokens' keys, over overlapping windows",
    "mistake.comp_bias_missing": "This leaves out the position bias B: each gate gets the bias of "
    "its token's place in the window, a row of B, before the softmax.",
    "mistake.comp_softmax_axis": "This softmax runs along the row, over the channels; a share "
    "is taken over the window's positions, each channel apart (down the column).",
    "compress.not_object": "compress must be an object with m, wkv, wgate, bias and norm (eps "
    "and overlap may be given), not {value}",
    "compress.unknown_key": "compress has no key {key}; its keys are {known}",
    "compress.missing": "compress is missing {missing}: the entries need m, wkv, wgate, bias "
    "and norm",
    "compress.needs_x": "compress pools its entries from X: give x and weights (not q, k, v "
    "typed in)",
    "compress.widths": "compress appends the same entries to every head's keys and values, so "
    "d_k and d_v must be equal, but d_k = {d_k} and d_v = {d_v}",
    "compress.overlap": "compress.overlap must be true (an entry pools two windows) or false, "
    "not {value}",
    "compress.m_long": "compress.m = {m} is longer than the sequence (n = {n}): no window would "
    "be whole and no entry made; give m of at most {n}, or leave compress out",
    "compress.shape": "{field} has shape {shape}; it must be {want} (wkv and wgate: d_model × "
    "d_k, twice d_k with overlap; bias: m × their columns; norm: d_k)",
    "stage.idx_kv.title": "The indexer's entries: the values to pool",
    "stage.idx_kv.why": "The lightning indexer pools entries of its own, narrower than the "
    "attention's, from X by its own projection: one key per entry that it scores the queries "
    "against to choose which entries they read.",
    "stage.idx_gate.title": "The indexer's entries: the gates",
    "stage.idx_gate.why": "The indexer's own gates, one per token and channel, as the "
    "attention's entries have theirs.",
    "stage.idx_weights.title": "The indexer's entries: each token's share",
    "stage.idx_weights.why": "For each of the indexer's entries, each channel apart, a softmax "
    "over the slots of its windows, as for the attention's entries.",
    "stage.idx_pooled.title": "The indexer's entries: pooled",
    "stage.idx_pooled.why": "Each of the indexer's entries is its slots' values, each times its "
    "share, summed channel by channel.",
    "stage.idx_norm.title": "The indexer's entries: RMSNorm",
    "stage.idx_norm.why": "Each of the indexer's entries over its root mean square, times the "
    "norm's weight.",
    "stage.idx_rot.title": "The indexer's entries: rotary position (RoPE)",
    "stage.idx_rot.why": "Each of the indexer's entries is turned at its window's first "
    "position, w·m, as a key is: these are the keys the indexer scores.",
    "stage.idx_q.title": "The indexer's queries",
    "stage.idx_q.why": "The indexer's queries come from the query latent C_Q through their own "
    "weight, several small index heads per token.",
    "stage.idx_q_rot.title": "The indexer's queries: rotary position (RoPE)",
    "stage.idx_q_rot.why": "Each index head's query is turned at its token's position, so that "
    "its score of an entry sees how far the entry's window starts from the query.",
    "stage.idx_w.title": "The indexer's weights per head",
    "stage.idx_w.why": "A projection of X gives each token one weight per index head: how much "
    "that head's score counts in the token's choice.",
    "stage.idx_scores.title": "The indexer's scores of the entries",
    "stage.idx_scores.why": "Each query scores each entry: per index head, ReLU(q·k/√D) weighted "
    "by the head's weight over √H_I, summed over the heads. Only the highest scores are kept.",
    "stage.idx_masked.title": "The indexer's scores of the visible entries",
    "stage.idx_masked.why": "An entry whose window is not yet whole at the query cannot be "
    "chosen: its score becomes −∞.",
    "stage.idx_topk.title": "The entries each query keeps (top-k)",
    "stage.idx_topk.why": "Each query keeps its k highest-scoring visible entries (1 = kept): the "
    "others are masked in every head's scores, as the future is. A query with fewer visible "
    "entries keeps them all.",
    "note.idx_q": "{heads} index heads of {dim} numbers each, side by side.",
    "note.idx_q_rot": "The first {dims} of each index head's {dim} columns turn at the token's "
    "position; the others pass through.",
    "note.idx_scores": "I[i, w] = Σ over the {heads} index heads of (w_h/√{heads})·ReLU(q_h·k_w/"
    "√{dim}).",
    "note.idx_visible": "A query at position p (t1 at 0) may choose an entry only once the "
    "entry's whole window is at or before p: C1 to C⌊(p + 1)/{m}⌋ (none while p + 1 < {m}); the "
    "others' scores become −∞.",
    "note.idx_topk": "Each row keeps {top_k} {top_k:score|scores}, the largest among the visible "
    "entries (ties: the earlier entry); every head's mask then hides the entries not kept.",
    "compress.positions": "compress pools windows of rows counted from the first token, at "
    "positions 0 to {last} (an entry turns at w·m): leave out positions and key_positions",
    "compress.index_object": "compress.index must be an object with wkv, wgate, bias, norm, wq, "
    "weights, heads and top_k, not {value}",
    "compress.index_overlap": "compress.index scores entries pooled over two windows: give "
    "compress.overlap true with it",
    "compress.index_latent": "compress.index reads mla's query latent C_Q: give mla with wq_a, "
    "q_a_norm and wq_b",
    "compress.decode": "Compressed keys (compress) are not computed step by step with a KV "
    "cache yet: leave out --decode (the whole run shows them).",
    "compress.tiles": "Compressed keys (compress) are not planned in tiles yet: leave out --tiles.",
    "compress.dtype": "Compressed keys (compress) have no low-precision rules yet: leave out "
    "--dtype (the float64 run shows them).",
    "stage.score_bias.title": "Score bias",
    "stage.score_bias.why": "A number added to each score before softmax that depends on the "
    "two positions, not on the tokens' content: ALiBi's fixed penalty that grows with "
    "distance, or a bias given, such as T5's, learned for each bucket of relative distances.",
    "stage.biased.title": "Scores plus bias",
    "stage.biased.why": "The scaled scores plus the bias, cell by cell. A negative bias makes "
    "a key less likely to be chosen without changing any vector.",
    "stage.capped.title": "Softcapping",
    "stage.capped.why": "c·tanh(s/c) keeps every score between −c and c: small scores pass "
    "almost unchanged, very large ones are flattened, so no single score can dominate "
    "softmax without bound (Gemma 2).",
    "note.pe_sinusoidal": "The paper's encoding for d_model = {d_model}: column 2i+1 holds "
    "sin(pos / 10000^(2i/d_model)) and column 2i+2 cos of the same angle (counting columns "
    "from 1), so the sine and cosine of one frequency sit side by side.",
    "note.pe_given": "A position encoding given as a matrix (learned position embeddings, as "
    "in GPT-2 or BERT): row i is added to token i.",
    "note.positions": "Positions: {positions}.",
    "note.rmsnorm": "Row by row: x / √(mean(x²) + ε) · w, with ε = {eps}.",
    "note.rope_pairs_half": "The first {dims} of d_k = {d_k} dimensions rotate, dimension i "
    "paired with i + {half} (HF LLaMA's rotate_half, GPT-NeoX). Pairs and their "
    "frequencies ω: {pairs}.",
    "note.rope_pairs_pairs": "The first {dims} of d_k = {d_k} dimensions rotate, in "
    "neighbouring pairs 2i−1, 2i (GPT-J, Meta's original code). Pairs and their "
    "frequencies ω: {pairs}.",
    "note.rope_angle": "Each pair turns by the angle φ = position × ω: a′ = a·cos φ − b·sin φ, "
    "b′ = b·cos φ + a·sin φ. Positions: {positions}.",
    "note.rope_keys": "Key positions: {positions}.",
    "note.rope_partial": "Partial rotary: dimensions {first}–{d_k} pass through unturned; "
    "only the first {dims} rotate.",
    "note.rope_factor": "cos φ and sin φ are multiplied by the attention factor {factor} "
    "(YaRN), so the rotated dimensions are scaled by it too.",
    "note.rope_scores": "Q and K here are the rotated ones (Q_rot, K_rot).",
    "note.rope_shift": "The point of RoPE, checked on these numbers: {query} at position "
    "{pos_q} with {key} at {pos_k} scores {score}; move both by {offset} (to {moved_q} and "
    "{moved_k}) and the score is {moved}. Only the distance, {distance}, matters.",
    "note.alibi_recipe": "ALiBi: the bias is −slope·|pos_i − pos_j|, a penalty growing with "
    "the distance. This head's slope, {slope}, comes from the paper's recipe for H = {heads}.",
    "note.alibi_given": "ALiBi: the bias is −slope·|pos_i − pos_j|, a penalty growing with "
    "the distance. This head's slope, {slope}, was given.",
    "note.alibi_bloom": "BLOOM adds +slope·j (by key position) instead. Under a causal mask "
    "that differs from −slope·|i − j| by the same amount in every cell of a row, so the "
    "weights are equal, but the biased scores shown here are not.",
    "note.alibi_and_bias": "B is ALiBi's −{slope}·|pos_i − pos_j| plus the score_bias given.",
    "note.score_bias": "A bias given as numbers (T5's relative position bias, or any additive "
    "mask), added after scaling.",
    "note.sinks": "Head {head}'s sink σ = {sink} is one more column of every row's softmax: the "
    "row maximum m is taken over the scores and σ, and e^(σ − m) joins the sum. After the "
    "division its column is dropped, so a row of weights sums to less than 1: what the sink "
    "takes, the tokens do not get (a query may attend to nothing in particular).",
    "note.sinks_weights": "The sum each row is divided by holds the sink's e^(σ − m) too, so it "
    "is never 0: a query whose every key is masked gives all its weight to the sink.",
    "sinks.count": "sinks must hold one logit per head: {count} given for heads = {heads}",
    "note.softcap": "c = {cap}: every score s becomes {cap}·tanh(s / {cap}), strictly "
    "between −{cap} and {cap}; the mask comes after.",
    "note.causal_positions": "Causal by position: query i may see key j when pos_j ≤ pos_i.",
    "note.causal_bottomright": "Causal with {n} {n:query|queries} and {m} {m:key|keys} aligned "
    "bottom-right, as when decoding with a cache: the queries sit at positions {first}… and each "
    "sees every key up to its own position.",
    "note.chunk": "Chunked attention C = {chunk}: the positions are cut into chunks of {chunk} "
    "(0…{last}, then the next {chunk}, …), and each query sees only the keys of its own chunk, "
    "up to itself (⌊pos_j / C⌋ = ⌊pos_i / C⌋ and pos_j ≤ pos_i, as Llama 4's chunked layers "
    "and Hugging Face's attention_chunk_size). Unlike a sliding window, a query at the start of "
    "a chunk sees no key before it.",
    "note.window": "Sliding window W = {window}: each query sees the W most recent positions, "
    "its own included (pos_i − pos_j < W, as Mistral and Hugging Face's sliding_window), so "
    "the {before} before it and itself. Other code counts differently (W keys before the "
    "query, or W on each side): check which before comparing.",
    "note.exact_stops_root": "No exact fractions from here on: RMSNorm divides by a square "
    "root, which is irrational for most inputs.",
    "note.exact_stops_rope": "No exact fractions from here on: the rotation multiplies by "
    "cos φ and sin φ, which are irrational for every algebraic angle φ ≠ 0, as φ = position × "
    "ω is here (the Lindemann–Weierstrass theorem).",
    "note.exact_stops_tanh": "No exact fractions from here on: tanh of a rational number "
    "other than 0 is irrational.",
    "positions.not_list": "{field} must be a list of {count} {count:whole number|whole numbers}, "
    "one per {what}",
    "positions.length": "{field} has {length} {length:entry|entries}, but there are {count} "
    "({what}): one position per row",
    "positions.not_integer": "{field} must be a whole number (a token's position)",
    "positions.too_large": "{field} is beyond ±{limit}",
    "variant.not_positive": "{field} must be a number greater than 0, not {value}",
    "variant.not_whole": "{field} must be a whole number, not {value}",
    "variant.length": "{field} has {length} {length:number|numbers}, but it needs {count} ({what})",
    "rope.not_object": 'rope must be true, a theta (10000) or an object such as {{"theta": '
    '10000, "style": "half"}}, not {value}',
    "rope.unknown_key": "rope has no key {key}; its keys are {known}",
    "rope.style": 'rope.style must be "half" (i with i + R/2: LLaMA, GPT-NeoX) or "pairs" '
    "(2i with 2i+1: GPT-J), not {value}",
    "rope.dims": "rope.dims = {dims} must be even and at most d_k = {d_k}: dimensions rotate "
    "in pairs, within one head",
    "alibi.count": "the alibi list has length {count}, but heads = {heads}: one slope per "
    "head (or alibi: true for the paper's slopes)",
    "alibi.kind": "alibi must be true (the paper's slopes) or a list of one slope per head, "
    "not {value}",
    "score_bias.shape": "score_bias is {shape}; it must be n×m = {n}×{m} (one bias for "
    "every head) or H×n×m = {heads}×{n}×{m} (one per head)",
    "causal_align.unknown": 'causal_align must be "top-left" or "bottom-right", not {value}',
    "chunk.needs_causal": "chunk_size = {chunk} needs the causal mask (mask is {mask}): chunked "
    "attention keeps, for each query, the keys of its own chunk up to itself; for other "
    "patterns give a 0/1 mask",
    "window.needs_causal": "window = {window} needs the causal mask (mask is {mask}): a "
    "sliding window keeps the most recent keys before each query; for a window on both sides "
    "give a 0/1 mask",
    "positional.needs_x": "positional adds a position encoding to X, but Q, K, V are given "
    "directly: there is no X to add it to",
    "positional.unknown": 'positional must be "sinusoidal" or an n×d_model matrix, not {value}',
    "positional.shape": "positional is {shape}; it must be n×d_model = {n}×{d}: one row per "
    "token, as wide as X",
    # ---- q/k norm kinds, attention temperature (issue 22) ----
    "ui.variant.qk_layernorm": "q/k LayerNorm",
    "ui.variant.qk_norm_projection": "the q/k norm over the whole projection",
    "ui.variant.qk_norm_per_head": "q/k norm weights per head",
    "ui.variant.qk_norm_after_rope": "the q/k norm after RoPE",
    "stage.q_layernorm.title": "Query norm (LayerNorm)",
    "stage.q_layernorm.why": "Each query row loses its mean and is divided by its standard "
    "deviation, then multiplied by a learned weight and shifted by a learned bias per dimension "
    "(Cohere, StableLM, Phi). Bounding the size of q keeps the scores from growing without "
    "limit during training.",
    "stage.k_layernorm.title": "Key norm (LayerNorm)",
    "stage.k_layernorm.why": "The same for each key row: (x − μ) / √(mean((x − μ)²) + ε) · w + "
    "b, row by row.",
    "note.layernorm": "Row by row: (x − μ) / σ · w + b, with μ the row's mean and "
    "σ = √(mean((x − μ)²) + ε), ε = {eps}.",
    "note.qk_norm_projection": "The mean (and the mean of the squares) is taken over the whole "
    "projection row, all {width} numbers of every head, before it is split into heads (OLMo 2): "
    "a head's row is divided by the same number as every other head's row of that token.",
    "note.qk_norm_after_rope": "The norm comes after the rotation here (HunYuan): RoPE turned "
    "the row first, and the norm rescales the turned row.",
    "hint.layernorm": "{cell} = ({src}[{i},{j}] − μ) / σ × w[{j}] + b[{j}], with μ the mean of "
    "row {i} of {src} and σ = √(mean((x − μ)²) + ε) of that row.",
    "mistake.layernorm_mean_kept": "These keep the row's mean (x / √(mean(x²) + ε), as "
    "RMSNorm does); LayerNorm first subtracts the mean μ of the row, then divides by σ.",
    "mistake.layernorm_bias_missing": "These leave out the bias; LayerNorm adds b_j to each "
    "dimension j after multiplying by w_j.",
    "stage.grad_back.layernorm.title": "Backward through the q/k LayerNorm",
    "stage.grad_back.layernorm.why": "The norm made x̂ = (x − μ)·ρ with ρ = 1/σ, then x̂·w + b. "
    "Its backward takes the gradient scaled the same way, ρ·(w ⊙ g), and removes two parts the "
    "norm undoes: its mean (a shift of the row) and its part along x̂ (a change of its spread).",
    "qk_norm.not_object": 'qk_norm must be an object such as {{"kind": "layer", "over": '
    '"head"}}, not {value}',
    "qk_norm.unknown_key": "qk_norm has no key {key}; its keys are {known}",
    "qk_norm.kind": 'qk_norm.kind must be "rms" (x / √(mean(x²) + ε) · w: Qwen3, OLMo 2) or '
    '"layer" ((x − μ) / σ · w + b: Cohere, StableLM, Phi), not {value}',
    "qk_norm.over": 'qk_norm.over must be "head" (each head\'s d_k numbers) or "projection" '
    "(the whole projection row before the split: OLMo 2), not {value}",
    "qk_norm.after_rope": "qk_norm.after_rope must be true (the norm after the rotation: "
    "HunYuan) or false (before it, the default), not {value}",
    "qk_norm.bias_needs_layer": 'qk_norm.bias is a LayerNorm\'s: give "kind": "layer" with it '
    "(RMSNorm has no bias)",
    "qk_norm.bias_not_object": 'qk_norm.bias must be an object {{"q": […], "k": […]}} shaped '
    "as q_norm and k_norm, not {value}",
    "qk_norm.bias_without_weight": "qk_norm.bias.{side} is given without {side}_norm: a "
    "bias belongs to a norm's weights",
    "qk_norm.needs_weights": "qk_norm says how the q/k norm works, but neither q_norm nor "
    "k_norm is given: give the weights of the norm",
    "qk_norm.shape": "{field} is {shape}; it needs d_k = {d_k} {d_k:number|numbers} (one vector "
    "for every head) or {letter}×d_k = {count}×{d_k} (one row per head: H query heads for q_norm, "
    "G K/V heads for k_norm)",
    "qk_norm.length": "{field} has {length} {length:number|numbers}, but it needs {d_k} (d_k), "
    "one vector for every head, or {letter}×d_k = {count}×{d_k}, one row per head (H query heads "
    "for q_norm, G K/V heads for k_norm)",
    "qk_norm.projection_shape": "{field} is {shape}; over the whole projection it needs "
    "{letter}·d_k = {count}×{d_k} = {width} {width:number|numbers}, one per column of the "
    "projection",
    "qk_norm.projection_backward": 'The backward pass cannot follow "over": "projection" head '
    "by head: each head's norm reads every head's row, so a head's gradient needs all the "
    'others\'. --backward and qkvcalc train need the norm per head ("over": "head"); '
    "explain without --backward shows this one",
    "qk_norm.projection_decode": 'A KV cache cannot take "over": "projection": each step would '
    "need the whole projection row of its new tokens. Run without decode",
    "ui.variant.attn_temperature": "attention temperature",
    "stage.q_temp.title": "Attention temperature on the queries",
    "stage.q_temp.why": "Each query row is multiplied by its own factor τᵢ, larger for later "
    "positions (Llama 4's layers without RoPE). Over many keys the scores of a far query would "
    "flatten out; a larger q makes its softmax sharper again.",
    "note.attn_temperature": "τ of each query row: {factors}.",
    "note.attn_temperature_llama4": "τᵢ = log(1 + ⌊(positions[i] + 1) / {floor_scale}⌋) · "
    "{attn_scale} + 1 (Llama 4's attn_temperature_tuning): 1 up to position {floor_scale} − 2, "
    "then a step up every {floor_scale} {floor_scale:position|positions}.",
    "note.exact_stops_temperature": "Decimals from here on: the factors τ are taken as "
    "decimals (Llama 4's are logarithms).",
    "hint.attn_temperature": "{cell} = {src}[{i},{j}] × τ[{i}], the factor of query row {i}.",
    "stage.grad_back.row_scale.title": "Backward through the attention temperature",
    "stage.grad_back.row_scale.why": "Row i of the queries was multiplied by τᵢ, so its "
    "gradient is multiplied by the same τᵢ: dQ[i, :] = τᵢ · dQ_temp[i, :].",
    "attn_temperature.kind": "attn_temperature must be a list of one factor per query row or "
    'an object {{"floor_scale": 8192, "attn_scale": 0.1}} (Llama 4), not {value}',
    "attn_temperature.count": "attn_temperature gives {count} {count:factor|factors}, but there "
    "are {n} {n:query|queries}: one factor per query row",
    "attn_temperature.unknown_key": "attn_temperature has no key {key}; its keys are {known}",
    "attn_temperature.needs_both": "attn_temperature as an object needs both floor_scale and "
    "attn_scale: τᵢ = log(1 + ⌊(positions[i] + 1) / floor_scale⌋) · attn_scale + 1",
    "attn_temperature.decode_list": "A KV cache needs attn_temperature as its rule "
    '({{"floor_scale": …, "attn_scale": …}}), not a list: a step\'s new query has no factor in '
    "a list of the prompt's rows",
    # ---- multi-head latent attention (issue 22, item 3: DeepSeek-V2/V3, Kimi) ----------
    "ui.variant.mla": "multi-head latent attention (r_q = {rank_q}, r_kv = {rank}, d_R = {rope}, "
    "d_C = {nope})",
    "ui.variant.mla_full_q": "multi-head latent attention (queries through W_Q, r_kv = {rank}, "
    "d_R = {rope}, d_C = {nope})",
    "stage.c_q.title": "Query latent",
    "stage.c_q.why": "Multi-head latent attention first squeezes each token's X into a short "
    "latent vector c_Q = X·W_DQ (DeepSeek's q_a_proj). The queries of every head are made "
    "from it, so the layer holds two thin matrices instead of one wide W_Q.",
    "stage.c_q_norm.title": "Query latent, normalised (RMSNorm)",
    "stage.c_q_norm.why": "The latent is rescaled to a root mean square of about 1 and "
    "multiplied by a learned weight per dimension (q_a_layernorm) before the heads read it.",
    "stage.c_kv.title": "Key/value latent",
    "stage.c_kv.why": "Keys and values share one latent c_KV = X·W_DKV (the first r_kv columns "
    "of DeepSeek's kv_a_proj_with_mqa). Every head's key and value is made from it, so a "
    "cache can keep c_KV instead of every head's K and V.",
    "stage.c_kv_norm.title": "Key/value latent, normalised (RMSNorm)",
    "stage.c_kv_norm.why": "The same RMSNorm on c_KV (kv_a_layernorm): x / √(mean(x²) + ε) · w, "
    "row by row.",
    "stage.k_rope.title": "The shared rotary key",
    "stage.k_rope.why": "RoPE cannot pass through the latent: a rotation between C_KV and the "
    "heads' W_UK would change with the position, so W_UK could not be folded into the query. "
    "So a few separate columns, k_R = X·W_KR (the last d_R columns of kv_a_proj_with_mqa), "
    "carry the position: one key for every head, rotated once per token.",
    "stage.k_nope.title": "Key from the latent (no position)",
    "stage.k_nope.why": "Each head's own part of the key, K_C = C_KV·W_UK: d_C numbers per "
    "token that carry no position.",
    "stage.mla_q.title": "Query from the latent",
    "stage.mla_q.why": "Each head's query from the normalised latent: d_R columns that RoPE "
    "will turn (first, here), then d_C that meet the keys' K_C.",
    "stage.mla_q_full.title": "Query projection",
    "stage.mla_q_full.why": "Each head's query straight from X (no query latent: q_lora_rank "
    "is None): d_R columns that RoPE will turn (first, here), then d_C that meet the keys' K_C.",
    "stage.mla_k.title": "Key: the shared rotary part and the head's own",
    "stage.mla_k.why": "A head's key is k_R (the same for every head) beside its own K_C. Its "
    "score q·k is the sum of the two parts' dot products: q_R·k_R (position) plus q_C·K_C "
    "(content).",
    "stage.mla_v.title": "Value from the latent",
    "stage.mla_v.why": "Each head's value, V = C_KV·W_UV: the same latent as the keys, other "
    "columns of kv_b_proj.",
    "note.mla_norm": "Row by row: x / √(mean(x²) + ε) · w over the {latent} latent, ε = {eps}.",
    "note.mla_c_q": "r_q = {rank} {rank:number|numbers} per token instead of the {d_model} of X.",
    "note.mla_c_kv": "r_kv = {rank} {rank:number|numbers} per token; with the {rope} of k_R a "
    "cache keeps {cached} numbers per token, where every head's K and V would take H·(d_k + d_v) "
    "= {heads}·({d_k} + {d_v}) = {full}.",
    "note.mla_k_rope": "d_R = {rope} columns, shared by all {heads} {heads:head|heads}: RoPE "
    "turns them in each head's key as the first d_R columns.",
    "note.mla_q_order": "qkvcalc puts each head's d_R = {rope} rotary columns first, then its "
    "d_C = {nope} others (DeepSeek's weights hold them the other way round); Q·Kᵀ sums over "
    "the columns, so the scores are the same.",
    "note.mla_join": "Columns 1 to {rope} are k_R, the same in every head; the next {nope} are "
    "this head's K_C.",
    "hint.mla_join": "{cell}: column {j} of K is a column of k_R when j ≤ d_R, else a column of "
    "K_C, copied.",
    "mistake.mla_latent_unnormed": "These use {latent} before its RMSNorm; the heads read the "
    "normalised latent, RMSNorm({latent}).",
    "mistake.mla_join_order": "These put K_C before k_R, as DeepSeek's weights do; qkvcalc's "
    "key has the shared k_R first, then K_C (the queries' columns are in the same order).",
    "stage.c_kv_cache.title": "The latent cache (C_KV)",
    "stage.c_kv_cache.why": "Multi-head latent attention caches the normalised latent C_KV of "
    "every token so far, not each head's keys and values: a step appends its new token's row. "
    "Here every head makes its K_C and V from the cache again, for clarity; real inference folds "
    "W_UK into the query and W_UV into W_O, so it never forms them.",
    "stage.k_rope_cache.title": "The rotary key cache (k_R)",
    "stage.k_rope_cache.why": "Beside C_KV the cache keeps the shared key k_R, turned once at its "
    "own position: every head reads it as the first d_R columns of its keys.",
    "note.mla_cache": "What it costs: per token r_kv + d_R = {rank} + {rope} = {per_token} "
    "numbers, {total} for {tokens} {tokens:token|tokens}, where a cache of every head's K and V "
    "would take H·(d_k + d_v) = {heads}·({d_k} + {d_v}) = {full} per token ({full_total} for "
    "{tokens} {tokens:token|tokens}).",
    "note.mla_from_cache": "Made again at every step from C_KV in the cache ({rows} × r_kv), "
    "here for clarity. The cache holds C_KV (and k_R), never K_C or V; real inference "
    "(DeepSeek-V2's paper, vLLM) never forms them either: it folds W_UK into the query side (the "
    "query meets C_KV directly) and W_UV into W_O.",
    "mistake.mla_norm_sum_not_mean": "These divide by √(Σ x²), the row's length; RMSNorm divides "
    "by the root of the mean, √(mean(x²) + ε), the mean over the latent's {over} = {count} "
    "{count:dimension|dimensions}.",
    "mla.not_object": 'mla must be an object such as {{"wq_a": …, "q_a_norm": …, "wq_b": …, '
    '"wkv_a": …, "kv_a_norm": …, "wkv_b": …, "rope_dims": 2}}, not {value}',
    "mla.unknown_key": "mla has no key {key}; its keys are {known}",
    "mla.replaces": "{key} cannot be given with mla: the latents stand in for W_Q, W_K, W_V "
    "(and their biases), and keys and values come from X",
    "mla.missing": "mla needs {missing}: see docs/input-format.md",
    "mla.two_queries": "mla gives its queries twice: either wq (Q = X·W_Q) or wq_a, q_a_norm and "
    "wq_b (through the query latent), not both",
    "mla.query_latent": "mla.wq_b needs mla.wq_a and mla.q_a_norm: Q = RMSNorm(X·W_DQ)·W_UQ",
    "mla.kv_heads": "mla has one key and value per query head: kv_heads is {kv_heads}, but there "
    "are {heads} {heads:head|heads}",
    "mla.rope_odd": "mla.rope_dims is {rope}; RoPE turns pairs of dimensions, so it must be even",
    "mla.rows": "{field} is {shape}, but it multiplies {what}, which has {rows} "
    "{rows:column|columns}: it needs {rows} {rows:row|rows}",
    "mla.norm_length": "{field} has {length} {length:number|numbers}, but {weight} makes {rank}: "
    "one weight per column of the latent",
    "mla.q_width": "{field} has {cols} {cols:column|columns}; it needs H·(d_C + d_R) with H = "
    "{heads} and d_R = rope_dims = {rope}: a multiple of {heads}, more than {rope} per head",
    "mla.kv_a_width": "mla.wkv_a has {cols} {cols:column|columns}; it needs r_kv + d_R with d_R = "
    "rope_dims = {rope}: more than {rope}",
    "mla.kv_b_width": "mla.wkv_b has {cols} {cols:column|columns}; it needs H·(d_C + d_v) with H "
    "= {heads} and d_C = {nope} (from the queries): a multiple of {heads}, more than {nope} per "
    "head",
    "mla.rope_dims": 'rope.dims is {dims}, but mla turns d_R = {rope} columns: give "dims": '
    "{rope} in rope",
    "mla.qk_norm": "{key} cannot be given with mla: its norms are on the latents "
    "(q_a_norm, kv_a_norm)",
    # ---- DeepSeek-V4's one key/value head in mla (shared_kv; qkvcalc/ops/mla.py) ----
    "stage.mla_shared_c_kv.title": "The one key/value head, projected",
    "stage.mla_shared_c_kv.why": "DeepSeek-V4 makes one key/value vector per token, c_KV = "
    "X·W_DKV (kv_proj), as wide as a query head: it is both the key and the value of every "
    "head. Its last d_R columns (the rotary ones) are taken first, as qkvcalc turns the first.",
    "stage.mla_shared_c_kv_norm.title": "The key/value head, normalised (RMSNorm)",
    "stage.mla_shared_c_kv_norm.why": "An RMSNorm over the whole row (kv_norm): x / "
    "√(mean(x²) + ε) · w, the rotary columns included.",
    "stage.mla_shared_k.title": "Key: the one key/value head",
    "stage.mla_shared_k.why": "Every head's key is C_KV itself: one key head read by every "
    "query head (multi-query attention).",
    "stage.mla_shared_v.title": "Value: the same vector as the key",
    "stage.mla_shared_v.why": "Every head's value is C_KV too (K = V): the numbers that score a "
    "token are the numbers it passes on.",
    "note.mla_shared_kv": "d_k = {d_k} numbers per token for all {heads} {heads:head|heads}, keys "
    "and values at once; columns 1–{rope} are W_DKV's last {rope} (the rotary ones), then its "
    "first {nope}.",
    "note.mla_shared_head": "The same C_KV in every head: K = V.",
    "note.mla_shared_norm": "Row by row: x / √(mean(x²) + ε) · w over the {width} "
    "{width:column|columns} of c_KV (the key/value head itself, not a latent), ε = {eps}.",
    "stage.mla_shared_c_kv_cache.title": "The key/value head's cache (C_KV)",
    "stage.mla_shared_c_kv_cache.why": "DeepSeek-V4 caches its one key/value head once for every "
    "head: each token's row of C_KV so far (with vo_rope, turned at its position, as keys and "
    "values both take it), a step appending its new token's row. Every head reads its keys and "
    "values from this one cache.",
    "stage.mla_shared_k_rope.title": "The rotary columns of C_KV",
    "stage.mla_shared_k_rope.why": "The keys turn C_KV's first d_R columns (the rotary ones) by "
    "the token's position, the values do not: these columns are taken apart to be turned once, "
    "at their own position, and cached turned.",
    "stage.mla_shared_k_rope_cache.title": "The turned rotary columns' cache (k_R)",
    "stage.mla_shared_k_rope_cache.why": "Beside C_KV the cache keeps its d_R rotary columns "
    "turned once at their own position: every head reads them as the first d_R columns of its "
    "keys.",
    "stage.mla_shared_k_nope.title": "The key's columns that do not turn",
    "stage.mla_shared_k_nope.why": "The last d_C columns of C_KV in the cache, as they are: the "
    "part of every head's key that carries no position.",
    "stage.mla_shared_k_join.title": "Key: the turned columns and the others",
    "stage.mla_shared_k_join.why": "A head's key is C_KV with its first d_R columns turned: the "
    "cached turned columns k_R beside C_KV's other d_C columns, the same in every head.",
    "stage.mla_shared_v_cache.title": "Value: the cached key/value head",
    "stage.mla_shared_v_cache.why": "Every head's value is C_KV from the cache as it is: its "
    "rotary columns unturned, since only the keys turn them.",
    "note.mla_shared_cache": "What it costs: per token d_k = {per_token} numbers, the same for "
    "every head ({heads} {heads:head|heads}), {total} for {tokens} {tokens:token|tokens}, where a "
    "cache of every head's K and V would take H·(d_k + d_v) = {heads}·({d_k} + {d_v}) = {full} per "
    "token ({full_total} for {tokens} {tokens:token|tokens}).",
    "note.mla_shared_cache_rope": "What it costs: per token d_k + d_R = {d_k} + {rope} = "
    "{per_token} numbers, the same for every head ({heads} {heads:head|heads}: C_KV, and its "
    "rotary columns turned for the keys), {total} for {tokens} {tokens:token|tokens}, where a "
    "cache of every head's K and V would take H·(d_k + d_v) = {heads}·({d_k} + {d_v}) = {full} per "
    "token ({full_total} for {tokens} {tokens:token|tokens}).",
    "note.mla_shared_cache_turned": "What it costs: per token d_k = {per_token} numbers, the same "
    "for every head ({heads} {heads:head|heads}: C_KV with its rotary columns turned once at the "
    "token's position: with vo_rope the values take them turned, as the keys do), {total} for "
    "{tokens} {tokens:token|tokens}, where a cache of every head's K and V would take H·(d_k + "
    "d_v) = {heads}·({d_k} + {d_v}) = {full} per token ({full_total} for {tokens} "
    "{tokens:token|tokens}).",
    "note.mla_shared_join": "Columns 1 to {rope} are the turned k_R from the cache, the same in "
    "every head; the next {nope} are C_KV's own.",
    "note.mla_shared_v_cache": "V = C_KV_cache: the values take C_KV unturned, the keys turned.",
    "mla.shared_kv": "mla.shared_kv must be true (one key/value head, K = V = C_KV) or false, "
    "not {value}",
    "mla.shared_kv_b": "mla.wkv_b cannot be given with mla.shared_kv: the one key/value head is "
    "C_KV itself, with no up-projection",
    "mla.shared_width": "mla.wkv_a has {cols} {cols:column|columns}; with mla.shared_kv it is "
    "W_DKV alone and makes the key of every head: d_k = d_C + d_R = {nope} + {rope} = {d_k} "
    "columns",
    # ---- multi-head latent attention's backward (qkvcalc/ops/mla.py) ----
    "stage.grad_k_nope.title": "Backward: the head's own part of the key",
    "stage.grad_k_nope.why": "K = [k_R | K_C] set the shared rotary key and the head's own "
    "columns side by side, so the head's K_C gets the last d_C columns of dK back, unchanged.",
    "stage.grad_k_rope.title": "Backward: gradient of the shared rotary key",
    "stage.grad_k_rope.why": "Every head's key begins with the same k_R, so k_R reaches the loss "
    "through every head: its gradient adds each head's first d_R columns of dK (the chain rule "
    "adds the paths of a matrix that is read more than once).",
    "note.grad_shared": "{x} is read by the keys of {count} heads, so its gradient adds their "
    "{count} shares.",
    "note.grad_shared_whole": "{x} is read whole as {names} in every head ({heads} "
    "{heads:head|heads}), so its gradient adds all {count} shares.",
    "stage.grad_c_q_norm.title": "Backward: gradient of the query latent C_Q",
    "stage.grad_c_q_norm.why": "Every head's query is C_Q times its own columns of W_UQ, so C_Q "
    "reaches the loss through every head: dC_Q = dQ·W_UQᵀ, each head's dQ times its own "
    "columns of W_UQ turned, summed over the heads.",
    "stage.grad_c_kv_norm.title": "Backward: gradient of the key/value latent C_KV",
    "stage.grad_c_kv_norm.why": "Every head makes its K_C and its V from C_KV, so the gradient of "
    "C_KV adds two paths in every head: dC_KV = dK_C·W_UKᵀ + dV·W_UVᵀ, summed over the heads "
    "(the terms of those that reach the loss: V's only when the loss reads the output).",
    "stage.grad_back.mla_norm.title": "Backward through the latent's RMSNorm",
    "stage.grad_back.mla_norm.why": "The norm multiplied each row of the latent by "
    "ρ = 1/√(mean(x²) + ε) and by w. Its backward has two parts: the gradient scaled the same "
    "way, ρ·(w ⊙ g), minus the part that would only change the row's length, which the norm "
    "undoes.",
    "stage.grad_wuq.title": "Gradient of W_UQ",
    "stage.grad_wuq.why": "Q = C_Q·W_UQ in each head, so dW_UQ = C_Qᵀ·dQ, each head's gradient in "
    "its own columns: each weight collects, over the tokens, its latent's number times the "
    "gradient of the query cell it fed.",
    "stage.grad_wuk.title": "Gradient of W_UK",
    "stage.grad_wuk.why": "K_C = C_KV·W_UK in each head, so dW_UK = C_KVᵀ·dK_C: the columns of "
    "each head's own key learn here; the shared rotary columns learn in W_KR.",
    "stage.grad_wuv.title": "Gradient of W_UV",
    "stage.grad_wuv.why": "V = C_KV·W_UV in each head, so dW_UV = C_KVᵀ·dV: the change of the "
    "matrix that makes each head's values from the shared latent.",
    "stage.grad_wdq.title": "Gradient of W_DQ",
    "stage.grad_wdq.why": "c_Q = X·W_DQ, so dW_DQ = Xᵀ·dc_Q: the down-projection learns from what "
    "every head's query asked of the latent, back through its norm.",
    "stage.grad_wdkv.title": "Gradient of W_DKV",
    "stage.grad_wdkv.why": "c_KV = X·W_DKV, so dW_DKV = Xᵀ·dc_KV: one matrix makes the latent of "
    "every head's keys and values, so it collects the gradients of all of them, back through "
    "the latent's norm.",
    "stage.grad_wkr.title": "Gradient of W_KR",
    "stage.grad_wkr.why": "k_R = X·W_KR, so dW_KR = Xᵀ·dk_R: every head shares the rotary key, so "
    "its weights learn from every head's keys at once.",
    "stage.grad_q_a_norm.title": "Gradient of the query latent's norm weight (q_a_norm)",
    "stage.grad_q_a_norm.why": "C_Q = c_Q·ρ·w, row by row, so each weight wⱼ collects, over the "
    "tokens, dC_Q[i, j] times the normalised cell c_Q[i, j]·ρᵢ.",
    "stage.grad_kv_a_norm.title": "Gradient of the key/value latent's norm weight (kv_a_norm)",
    "stage.grad_kv_a_norm.why": "C_KV = c_KV·ρ·w, row by row, so each weight wⱼ collects, over "
    "the tokens, dC_KV[i, j] times the normalised cell c_KV[i, j]·ρᵢ.",
    "stage.grad_x.mla.title": "Backward: gradient of the input X",
    "stage.grad_x.mla.why": "In latent attention X feeds the down-projections and the shared "
    "rotary key (c_Q = X·W_DQ, c_KV = X·W_DKV, k_R = X·W_KR), not W_Q, W_K and W_V. The "
    "multivariate chain rule adds those paths: dX = dc_Q·W_DQᵀ + dc_KV·W_DKVᵀ + dk_R·W_KRᵀ "
    "(without a query latent, dQ·W_Qᵀ in place of the first). This is what flows on to the "
    "layer below.",
    "note.mla_grad_q_order": "Each head's columns are in qkvcalc's order, its d_R = {rope} "
    "rotary columns first, then its d_C = {nope}; in {key} as given they are the head's last "
    "{rope}, so a step puts them back there.",
    "note.mla_grad_kv_b": "wkv_b holds, head by head, W_UK's d_C = {nope} columns, then W_UV's "
    "d_v = {d_v}: its gradient interleaves dW_UK and dW_UV the same way.",
    "note.mla_grad_shared_order": "Columns in the stages' order: W_DKV's last {rope} (the rotary "
    "ones) first, then its first {nope}; qkvcalc train puts each column back where wkv_a "
    "holds it.",
    "stage.grad_mla_shared_c_kv_norm.title": "Backward: gradient of the one key/value head C_KV",
    "stage.grad_mla_shared_c_kv_norm.why": "Every head's key and value are C_KV itself (K = V = "
    "C_KV), so C_KV reaches the loss through each head twice: dC_KV = Σₕ (dKₕ + dVₕ), every "
    "head's dK and dV added whole (the keys' alone under a loss on the weights, which the values "
    "do not reach).",
    "stage.grad_back.mla_shared_norm.title": "Backward through the key/value head's RMSNorm",
    "stage.grad_back.mla_shared_norm.why": "The norm multiplied each row of c_KV by "
    "ρ = 1/√(mean(x²) + ε) and by w. Its backward has two parts: the gradient scaled the same "
    "way, ρ·(w ⊙ g), minus the part that would only change the row's length, which the norm "
    "undoes.",
    "stage.grad_mla_shared_wdkv.title": "Gradient of W_DKV",
    "stage.grad_mla_shared_wdkv.why": "c_KV = X·W_DKV, so dW_DKV = Xᵀ·dc_KV: one matrix makes the "
    "key and the value of every head, so it collects the gradients of all of them, back through "
    "the norm.",
    "stage.grad_mla_shared_kv_a_norm.title": "Gradient of the key/value head's norm weight "
    "(kv_a_norm)",
    "stage.grad_mla_shared_kv_a_norm.why": "C_KV = c_KV·ρ·w, row by row, so each weight wⱼ "
    "collects, over the tokens, dC_KV[i, j] times the normalised cell c_KV[i, j]·ρᵢ (the columns "
    "in the stages' order, the rotary ones first).",
    "stage.grad_x.mla_shared.title": "Backward: gradient of the input X",
    "stage.grad_x.mla_shared.why": "With one key/value head X feeds the query's down-projection "
    "and W_DKV (c_Q = X·W_DQ, c_KV = X·W_DKV), not W_Q, W_K and W_V. The multivariate chain rule "
    "adds those paths: dX = dc_Q·W_DQᵀ + dc_KV·W_DKVᵀ (without a query latent, dQ·W_Qᵀ in place "
    "of the first). This is what flows on to the layer below.",
    # ---- the sparse-attention indexer beside mla (qkvcalc/ops/indexer.py) ----
    "ui.variant.indexer": "sparse-attention indexer (H_I = {heads} {heads:index head|index heads} "
    "of D = {dim}, top_k = {top_k}, RoPE {style})",
    "stage.index_q.title": "Indexer: its queries",
    "stage.index_q.why": "The indexer is a second, light attention that only chooses keys. Its "
    "queries come from the same query latent as the heads' (DeepSeek's q_resid): H_I small "
    "index heads per token.",
    "stage.index_k.title": "Indexer: its key",
    "stage.index_k.why": "One key per token, shared by every index head: k_I = X·W_IK (the "
    "indexer's wk), straight from X.",
    "stage.index_k_norm.title": "Indexer: its key, normalised (LayerNorm)",
    "stage.index_k_norm.why": "The indexer's own LayerNorm on its key (k_norm, with a weight "
    "and a bias): each row loses its mean and is divided by its standard deviation.",
    "stage.index_q_rot.title": "Indexer: its queries turned (RoPE)",
    "stage.index_q_rot.why": "The first d_R numbers of each index head turn by the token's "
    "position, with the layer's frequencies, so that the indexer too sees how far apart two "
    "tokens are.",
    "stage.index_k_rot.title": "Indexer: its key turned (RoPE)",
    "stage.index_k_rot.why": "The key's first d_R numbers, turned the same way at the key's own "
    "position.",
    "stage.index_weights.title": "Indexer: each index head's weight",
    "stage.index_weights.why": "Each token decides how much each index head counts for it: "
    "w = X·W_w (weights_proj), one weight per index head, which may be negative.",
    "stage.index_scores.title": "Indexer: the index scores",
    "stage.index_scores.why": "Each index head scores each key with ReLU(q·k/√D): a key it "
    "finds unrelated scores 0, never less. The heads' scores are weighted by w/√H_I and summed: "
    "one number per query and key, which says how much the key is worth attending to.",
    "stage.index_masked.title": "Indexer: the scores, masked",
    "stage.index_masked.why": "The causal mask first: a key the query may not see gets −∞, so "
    "it cannot be chosen.",
    "stage.index_topk.title": "Indexer: the top-k keys of each query",
    "stage.index_topk.why": "Each query keeps the top_k keys with the largest index scores "
    "(1 = kept). This choice is a selection, not a number that changes smoothly: it has no "
    "gradient, and the indexer runs under torch.no_grad() in transformers.",
    "stage.index_mask.title": "Indexer: the mask it gives",
    "stage.index_mask.why": "0 where a key is kept and −∞ where it is not: added to every head's "
    "scores with the causal mask, so each head's softmax reads only the chosen keys. From here "
    "on the attention is multi-head latent attention's own.",
    "note.index_q": "{heads} {heads:index head|index heads} of D = {dim} {dim:number|numbers} "
    "each, from {source}.",
    "note.index_k": "D = {dim} {dim:number|numbers} per token: one key for all {heads} "
    "{heads:index head|index heads}.",
    "note.index_weights": "{heads} {heads:weight|weights} per token, one per index head (divided "
    "by √H_I in the scores).",
    "note.index_rope_half": "The first d_R = {rope} of each index head's D = {dim} numbers "
    "rotate, dimension i paired with i + {half} (rotate_half, as DeepSeek-V3.2's indexer), "
    "while its attention turns its own pairs side by side.",
    "note.index_rope_pairs": "The first d_R = {rope} of each index head's D = {dim} numbers "
    "rotate in neighbouring pairs (2i with 2i + 1, GLM-MoE-DSA's interleaved layout).",
    "note.index_scores": "Summed over the {heads} {heads:index head|index heads}; q from {q}, k "
    "from {k}, D = {dim}. As transformers computes it on a CPU: no Hadamard rotation (it leaves "
    "q·k as it is) and no FP8.",
    "note.index_tie": "In {count} row(s), {rows}, equal index scores straddle the cut: of them "
    "the earlier keys are kept (torch.topk keeps some of them in an order of its own).",
    "note.index_masked": "−∞ where the causal mask hides the key: it is never chosen.",
    "note.index_topk": "top_k = {top_k} of the m = {m} {m:key|keys}; a query that may see fewer "
    "keeps all it may see. Of equal scores the earlier key is kept first.",
    "note.index_mask": "Every head's masked stage adds this mask to the causal one.",
    "note.indexer_grad": "This mask holds the indexer's choice M_I (each query's top_k = "
    "{top_k} keys, or all it may see when fewer) as fixed numbers: a top-k is a choice, "
    "with no gradient, so the backward pass goes back through the latent attention alone. "
    "The indexer's weights (W_IQ, W_IK, its key's LayerNorm, W_w) get no gradient from this "
    "loss, and what the indexer reads ({reads}) gets no share of the gradient through it: "
    "transformers runs DeepSeek-V3.2's indexer under torch.no_grad(). DeepSeek-V3.2 trains "
    "the indexer by a loss of its own (transformers' page on the model: the KL divergence "
    "between the attention's weights, summed over the heads and normalised, and the softmax "
    "of the index scores).",
    "note.indexer_folded": "The indexer's mask M_I (index_mask) is folded in: each query keeps "
    "only its top_k = {top_k} {top_k:key|keys}.",
    "hint.index_rope": "{cell}: dimension {j} of row {i} of {src}, turned with its partner in "
    "the same index head by φ = position × frequency (a dimension past d_R of its head passes "
    "through).",
    "hint.index_scores": "{cell} = the sum over the index heads h of (w[{i},h]/√H_I) × "
    "ReLU(q_h of row {i} · k of row {j} / √D).",
    "hint.index_topk": "{cell} = 1 when {src}[{i},{j}] is among the {top_k} largest of row {i} "
    "(and not −∞), else 0.",
    "hint.index_mask": "{cell} = 0 where keep[{i},{j}] = 1, −∞ where it is 0.",
    "mistake.index_weights_missing": "These sum the index heads' ReLU scores with equal "
    "weights: each head's score is multiplied by its own weight w[i,h]/√H_I first.",
    "mistake.index_relu_missing": "These leave out the ReLU: a head that finds the key "
    "unrelated (q·k < 0) should add 0, not a negative score.",
    "mistake.index_topk_ignored": "This keeps every key the query may see: the indexer keeps "
    "only the top_k = {top_k} with the largest index scores.",
    "mistake.index_topk_per_head": "This takes a top-k per index head and keeps what any head "
    "chose: the indexer sums the weighted heads first, then takes one top-k of the sum.",
    "indexer.needs_mla": "indexer chooses keys for multi-head latent attention: give it beside "
    "mla (it reads the query latent)",
    "indexer.not_object": 'indexer must be an object such as {{"wq": …, "wk": …, "weights": …, '
    '"heads": …, "top_k": …}}, not {value}',
    "indexer.unknown_key": "indexer has no key {key}; its keys are {known}",
    "indexer.missing": "indexer needs {missing}: see docs/input-format.md",
    "indexer.rope_style": 'indexer.rope_style must be "half" or "pairs", not {value}',
    "indexer.q_rows": "{field} is {shape}, but the indexer's queries are made from {what}: it "
    "must be {want} in the {layout} layout",
    "indexer.q_width": "indexer.wq has {cols} {cols:column|columns}; it needs H_I·D with H_I = "
    "heads = {heads}: a multiple of {heads}, with at least d_R = {rope} per index head (RoPE "
    "turns them)",
    "indexer.shape": "{field} is {shape}, but it must be {want} in the {layout} layout "
    "(H_I = {heads} {heads:index head|index heads} of D = {dim})",
    "indexer.norm_length": "{field} has {length} {length:number|numbers}, but the indexer's key "
    "has D = {dim}",
    "indexer.decode": "The sparse-attention indexer is not computed step by step with a KV "
    "cache: leave out --decode (the whole run shows it).",
    "extract.dsa_shared": "{model}: layer {layer} has no indexer of its own: it reuses the top-k "
    'keys of layer {full} (a "shared" layer in indexer_types), chosen from that layer\'s input; '
    "extract layer {full}, or another layer that runs its own indexer",
    "extract.dsa_tie": "{model}: layer {layer}'s indexer gives equal scores at the cut of its "
    "top-k in row(s) {rows}, and torch.topk chose among them otherwise than qkvcalc (the earlier "
    "keys): the problem would attend to other keys than the layer did. Extract other tokens (or "
    "fewer than top_k + 1 of them)",
    "extract.mla_bias": "{model}: layer {layer}'s latent projections have biases "
    "(attention_bias), which mla does not take",
    # ---- qkvcalc extract (issue 16) ----------------------------------------------------
    "extract.needs_models": "qkvcalc {command} runs the model with PyTorch and transformers, and "
    "{missing} is not installed here: pip install 'qkvcalc[models]'",
    "extract.architecture": "{model} is a {model_type!r} model, which qkvcalc extract does not "
    "know; it knows {known}",
    "extract.layer": "layer {layer}: {model} has {count} {count:layer|layers}, numbered 0 to "
    "{last}",
    "extract.not_attention": "layer {layer} of {model} is a {kind} layer, not attention, which "
    "qkvcalc extract does not read; the attention layers of this model are {attention}",
    "extract.minimax_act": "MiniMax's lightning layers apply the config's hidden_act to q, k and "
    "v, and qkvcalc's lightning key has silu only; this model's is {act}",
    "extract.hybrid": "{model} is a {arch} model ({model_type!r}): a hybrid whose layers are "
    "softmax attention and {kind} layers, and qkvcalc extract does not read its attention layers "
    "yet",
    "extract.dsv4_layer": "layer {layer} of {model} is a DeepSeek-V4 {kind} layer, which qkvcalc "
    "extract does not read: {why}. A DeepSeek-V4 model's sliding-window, heavily compressed and "
    "compressed sparse layers extract; this model's layers are {layers}",
    "extract.dsv4": "{model} is a DeepSeek-V4 model with a layer of a kind qkvcalc does not "
    "know, which it does not read as a whole; its layers of the known kinds extract one at a "
    "time (qkvcalc extract --layer L); its layers are {layers}",
    "dsv4.sliding": "sliding-window attention (W = {window})",
    "dsv4.csa": "compressed sparse attention (m = {m}, top {top_k})",
    "dsv4.hca": "heavily compressed attention (m = {m})",
    "dsv4.other": "{name!r} (a kind qkvcalc does not know)",
    "dsv4.layers": "{layers}: {kind}",
    "dsv4.join": "{first}; {rest}",
    "dsv4.why_other": "qkvcalc does not know what a layer of this kind computes",
    "extract.not_expressible": "{model} is a {arch} model ({model_type!r}), which qkvcalc "
    "extract does not read: {reason}",
    "extract.bitnet_quantized": "{model} is a quantized BitNet checkpoint (its config's "
    "quantization_config, quant_method {method}), which qkvcalc extract does not read: "
    "transformers then builds each projection as BitLinear or AutoBitLinear, which round its "
    "input to 8 bits per token when they run, a step the input format has no key (field) for. A "
    "BitNet model without quantization_config (plain nn.Linear projections) is read, its "
    "attn_sub_norm as sub_norm.",
    "refused.jetmoe": "its attention is a mixture of attention heads: each token's queries and "
    "its share of the output projection come from the experts its router picks for that token, "
    "so W_Q and W_O differ from token to token, and a problem has one W_Q and one W_O",
    "refused.inkling": "its K and V are not x·W_K and x·W_V: after k_proj and v_proj a short "
    "causal convolution (k_sconv, v_sconv) mixes each token's row with the rows of the tokens "
    "before it, and a problem projects each token's row alone",
    "refused.inkling2": "its K and V are not x·W_K and x·W_V: after k_proj and v_proj a short "
    "causal convolution (k_sconv, v_sconv) mixes each token's row with the rows of the tokens "
    "before it; and its sinks are a projection of each token (sink_proj), where a problem has "
    "one sink per head",
    "extract.doge_window": "{model}, layer {layer}: a row of the scores sees {keys} keys, and "
    "past keep_window_size = {keep} keys Doge's dynamic mask keeps only the {keep} keys of "
    "largest bias, per head and row, which no mask of a problem can say: give at most {keep} "
    "tokens",
    "extract.block_sparse": "layer {layer} of {model} is a block-sparse attention layer: its "
    "indexer picks, for each query and each group of heads that share K and V, the blocks of "
    "keys the query may see, a mask of each head's own, and a problem has one mask for every "
    "head; the layers extract reads in this model are {layers}",
    "hybrid.gated_deltanet": "linear-attention (Gated DeltaNet)",
    "hybrid.mamba": "state-space (Mamba)",
    "hybrid.short_conv": "short-convolution",
    "hybrid.kimi_delta": "linear-attention (Kimi Delta Attention)",
    "hybrid.lightning": "linear-attention (lightning attention)",
    "hybrid.rg_lru": "recurrent (RG-LRU)",
    "hybrid.none": "none",
    "hybrid.mlp": "feed-forward (MLP-only)",
    "hybrid.other": "non-attention",
    "extract.token_id": "token id {id} is outside the vocabulary: {model} has {size} tokens, "
    "ids 0 to {last}",
    "extract.ids_syntax": "--ids {text!r}: write the token ids as whole numbers split by spaces "
    'or commas, e.g. "15496 995"',
    "extract.ids_empty": "no tokens to run: give at least one token id",
    "extract.input_choice": "give the tokens as --ids or as --text: exactly one of them",
    "extract.no_tokenizer": "--text needs the model's tokenizer, and {model} has none: give "
    "the token ids with --ids",
    "extract.not_checkpoint": "{path} is not a Hugging Face checkpoint folder: it has no "
    "config.json (a checkpoint holds config.json and the weights, such as model.safetensors)",
    "extract.not_a_file": "{model} holds {file!r}, which is not a file (a named pipe, a socket "
    "or a device): a checkpoint folder holds files, and reading this one could wait forever",
    "extract.sizes_lie": "{path}'s config.json does not match its weights: {weight} is {stored} "
    "in the checkpoint, but the config makes it {made}; the sizes in config.json (heads, head "
    "sizes, hidden size) must be those the weights were trained with.",
    "extract.no_weights": "{path} has a config.json but its weights could not be read: {reason}",
    "extract.custom_code": "{model} ships code of its own ({file} names it in auto_map), "
    "and qkvcalc never runs a checkpoint's code: use a checkpoint of an architecture "
    "transformers has built in",
    "extract.custom_code_needed": "{model} needs code of its own to load, and qkvcalc never "
    "runs a checkpoint's code: use a checkpoint of an architecture transformers has built in",
    "extract.pickled_weights": "{path}: its weights file is a pickle that holds more than "
    "tensors, and unpickling it could run code, so it was not read; save the weights as "
    "model.safetensors",
    "extract.no_model_type": "{path}: its config.json does not say which architecture the "
    "model is (it has no model_type)",
    "extract.bad_config": "{model}: transformers cannot build a model from its config.json: "
    "{reason}",
    "extract.config_field": "{model}: {field} in its config.json is {value}; it must be a "
    "whole number of at least 1",
    "extract.config_too_big": "{path} is {size} bytes; a checkpoint's configuration is a few "
    "kilobytes, and one of more than {limit} bytes is not read",
    "extract.config_nested": "{path} is nested too deeply to read: a checkpoint's "
    "configuration is a few levels deep",
    "extract.too_many_layers": "{model}: its config.json gives {count} layers; no model has "
    "more than {limit}, so it is not built",
    "extract.too_big": "{model}: its weights would take about {need}, more than the {have} of "
    "memory this machine lets qkvcalc use",
    "extract.too_big_float64": "{model}: a float64 run of {tokens} {tokens:token|tokens} needs "
    "about {need} (the embeddings and one layer at a time in float64, the layer's weights as a "
    "problem), more than the {have} of memory this machine has available now: free memory, give "
    "fewer tokens, or leave --dtype at auto",
    "extract.out_of_memory": "{model}: the machine ran out of memory while loading or running "
    "the model",
    "extract.too_many_tokens": "{count} tokens: qkvcalc extract runs at most {limit}; give fewer "
    "token ids or a shorter --text",
    "extract.too_many_positions": "{count} tokens: {model} has learned positions for {positions} "
    "{positions:token|tokens} only; give at most {positions}",
    "extract.too_many_table_positions": "{count} tokens: {model}'s table of sinusoidal "
    "positions has {positions} {positions:row|rows}, one per position; give at most {positions} "
    "{positions:token|tokens}",
    "extract.not_finite": "{model}, layer {layer}: {field} holds NaN or an infinity (at index "
    "{where}), which the problem file cannot hold",
    "extract.not_finite_value": "{model}, layer {layer}: {field} is {value}, which the problem "
    "file cannot hold",
    "extract.id_too_long": "--ids: a token id of {digits} digits; a vocabulary is far smaller",
    "extract.config_not_finite": "{model}: {field} in its config.json is {value}; every "
    "number of a model must be finite",
    "extract.hub_unreachable": "{model} is not a folder here, the Hugging Face hub ({hub}) "
    "cannot be reached, and the model is not in the local cache",
    "extract.no_folder": "{path}: there is no such folder",
    "extract.cannot_load": "cannot load {model}: {reason}",
    "extract.dtype": "dtype {dtype!r}: choose auto, float64, float32 or bfloat16",
    "extract.dtype_loaded": "dtype {dtype}: a model that is already loaded runs in its own "
    'dtype ({own}); pass dtype="auto", or convert the model first (model.to(torch.float64))',
    "extract.not_a_model": "extract takes a transformers model or the path of a checkpoint "
    "folder, not a {kind}",
    "extract.name": "{model}, layer {layer}",
    "extract.description": "The self-attention of layer {layer} of {model} ({arch}) on {n} "
    "{n:token|tokens}: x is the exact input of that attention from a run in {dtype}, the weights "
    "are the layer's own, in float64.",
    "extract.description_kv_shared": "The self-attention of layer {layer} of {model} ({arch}) on "
    "{n} {n:token|tokens}: x is the exact input of that attention from a run in {dtype}; W_Q, the "
    "query norm and W_O are the layer's own, in float64.",
    "extract.description_linear": "The linear-attention (Gated DeltaNet) layer {layer} of {model} "
    "({arch}) on {n} {n:token|tokens}: x is the exact input of that layer from a run in {dtype}, "
    "the weights are the layer's own, in float64.",
    "extract.kda_activation": "layer {layer} of {model} is a Kimi Delta Attention layer whose "
    "convolution's activation is {act} and whose output gate's is {gate}; the kimi_delta key "
    'computes SiLU and sigmoid only (Kimi Linear\'s own: hidden_act "silu").',
    "extract.kda_lower_bound": "layer {layer} of {model} is a Kimi Delta Attention layer whose "
    "bounded decay g = b·σ(e^(A_log)·(F + dt_bias)) has the bound b = {bound} (kda_lower_bound); "
    "the kimi_delta key reads a bound below 0 only (each channel's decay e^g then lies in (e^b, "
    "1)).",
    "extract.gdn_activation": "layer {layer} of {model} is a Gated DeltaNet layer whose "
    "convolution's activation is {act} and whose gated norm's is {gate}; the gated_delta key "
    'computes SiLU only (the hybrids\' own: hidden_act "silu").',
    "extract.description_kda": "The linear-attention (Kimi Delta Attention) layer {layer} of "
    "{model} ({arch}) on {n} {n:token|tokens}: x is the exact input of that layer from a run in "
    "{dtype}, the weights are the layer's own, in float64.",
    "extract.x_layernorm": "Here x = {norm}(h), h being the input of layer {layer} (the "
    "residual stream): {arch} is pre-norm, with a LayerNorm before its attention. Each row of h "
    "minus its mean is divided by √(its variance + ε), ε = {eps}, then multiplied by {norm}'s "
    "weight and {norm}'s bias is added: before that weight and bias, each row has mean 0 and "
    "a variance just under 1.",
    "extract.x_layernorm_no_bias": "Here x = {norm}(h), h being the input of layer {layer} (the "
    "residual stream): {arch} is pre-norm, with a LayerNorm (without a bias) before its "
    "attention. Each row of h minus its mean is divided by √(its variance + ε), ε = {eps}, then "
    "multiplied by {norm}'s weight: before that weight, each row has mean 0 and a variance just "
    "under 1.",
    "extract.x_rmsnorm": "Here x = {norm}(h), h being the input of layer {layer} (the residual "
    "stream): {arch} is pre-norm, with an RMSNorm before its attention. Each row of h is divided "
    "by √(the mean of its squares + ε), ε = {eps}, then multiplied by {norm}'s scale; the mean "
    "is not subtracted, so before that scale a row's mean of squares is just under 1 and its "
    "mean need not be 0.",
    "extract.x_post": "Here x is the input of layer {layer} itself, the output of layer "
    "{previous}: {arch} is post-norm, its norms come after the attention and the residual, and "
    "nothing comes between the layer's input and its attention.",
    "extract.x_post_first": "Here x is the input of layer 0 itself, the embeddings as the model "
    "gives them to its first layer: {arch} is post-norm, its norms come after the attention and "
    "the residual, and nothing comes between the layer's input and its attention.",
    "extract.x_block_input": "Here x is the input of layer {layer} itself: nothing comes "
    "between the layer's input and its attention.",
    "extract.kv_shared": "This layer has no keys and values of its own: it reuses those of layer "
    "{earlier} (KV sharing), so the source is layer {earlier}'s attention input, and W_K, W_V "
    "and the key norm are layer {earlier}'s.",
    "extract.description_block": "The self-attention of layer {layer} of {model} ({arch}) on {n} "
    "{n:token|tokens}: x is the exact input of that attention from a run in {dtype}, the weights "
    "are those this layer's call of it uses, in float64.",
    "extract.shared_block": "Layers {layers} call this one attention block and share its weights.",
    "extract.adapters_folded": "W_Q, W_K and W_V are the block's plus this layer's own adapters, "
    "folded in (W + B·A).",
    "extract.value_scale_folded": "Of these, W_V and b_V are v_proj's times "
    "attention_value_scale ({scale}), the factor this model puts on V, folded in.",
    "extract.loading": "Loading {model} …",
    "extract.running": "Running {model} up to layer {layer} …",
    "extract.mismatch": "{model}, layer {layer}: the problem extract made does not reproduce "
    "the layer under transformers {version} (model type {model_type}): its output differs from "
    "the layer's own by up to ≈{difference} (≈{relative} of the output's largest value; a "
    "{dtype} run allows {tolerance}). extract writes no problem that computes another layer: "
    "use a transformers version qkvcalc is tested with ({tested}), or report this model type",
    "extract.layout": "{model}: the {model_type} modules of transformers {version} have no "
    "'{attribute}', which extract reads; extract does not guess at a layout it does not know: "
    "use a transformers version qkvcalc is tested with ({tested})",
    "extract.model_failed": "{model_type}: transformers' own forward pass stopped before layer "
    "{layer} could be read ({error}); extract runs the model exactly as transformers defines it "
    "and reads the layer on the way, so it cannot read this one",
    "extract.no_output": "{model}, layer {layer}: under transformers {version} the {model_type} "
    "attention never called the output projection extract reads, so its output cannot be "
    "checked; extract does not guess: use a transformers version qkvcalc is tested with "
    "({tested})",
    "help.extract": "Take one layer's attention out of a Hugging Face model as a problem for "
    "qkvcalc explain: its exact input, weights and options (needs qkvcalc[models]).",
    "help.extract.model": "A checkpoint folder (config.json and the weights), or a hub name "
    "where this machine can download.",
    "help.extract.layer": "The layer, counted from 0 as transformers counts.",
    "help.extract.ids": 'The token ids, split by spaces: "15496 995".',
    "help.extract.text": "Text for the model's tokenizer to turn into token ids.",
    "help.extract.dtype": "The dtype of the run: auto (the checkpoint's own), or float64 for "
    "a float64-exact x.",
    "help.extract.output": "Write the problem to this file instead of standard output (a "
    "name ending in .npz: as numpy arrays).",
    # ---- qkvcalc heads: every layer's every head at a glance ---------------------------------
    "heads.running": "Running {model} once, every layer …",
    "heads.head": "head {head}: the layer has {count} {count:head|heads}, numbered 1 to {count}",
    "heads.cannot_split": "the layer's problem has the key {key!r}, which qkvcalc heads cannot "
    "cut to one head; qkvcalc extract writes the whole layer",
    "heads.head_name": "{name}, head {head}",
    "heads.head_description": "Head {head} of the {heads} of {name}, as a problem of its own: "
    "its query columns, the key and value columns of the K/V head {kv_head} it reads, and no "
    "output projection (a head's output is its part of the concatenation before W_O).",
    "heads.too_many_weights": "{n} tokens: every head of {model} would be {count} weights "
    "(layers × heads × n² = {layers} × {heads} × {n}²), more than the {limit} qkvcalc heads "
    "shows; give fewer tokens, or take one layer with qkvcalc extract",
    "heads.too_many_weights_implicit": "{n} tokens: every head of {model} would be {count} "
    "weights ((layers × heads + linear-attention layers × heads) × n² = ({layers} × {heads} + "
    "{linear} × {linear_heads}) × {n}²), more than the {limit} qkvcalc heads shows; give fewer "
    "tokens, or take one layer with qkvcalc extract",
    "heads.too_many_weights_per_layer": "{n} tokens: every head of {model} would be {count} "
    "weights ({heads} heads in all, each layer with its own count, × {n}²), more than the "
    "{limit} qkvcalc heads shows; give fewer tokens, or take one layer with qkvcalc extract",
    "heads.layer_and_head": "--layer and --head go together: give both to write one head's "
    "problem, or neither for every head at a glance",
    "heads.format_with_head": "--format {format}: --layer with --head writes that head's "
    "problem as JSON, as qkvcalc extract does; leave --format out",
    "heads.title": "Attention weights of every head: {model} ({arch}, {dtype}); tokens: {n}; "
    "layers × heads: {layers} × {heads}",
    "heads.how_to_read": "One block per head, one row of blocks per layer (from 0); in a block "
    "the rows are the queries and the columns the keys, in token order, and the darker a cell "
    "the more weight ({ramp}, from 0 to 1).",
    "heads.how_to_read_mixed": "One block per head, one row of blocks per layer (from 0); in a "
    "block the rows are the queries and the columns the keys, in token order, and the darker a "
    "cell the larger its number ({ramp}): in a softmax layer's block its weight, from 0 to 1; in "
    "an implicit layer's block its |W|, from 0 to that layer's largest |W|, given above it.",
    "heads.how_to_read_implicit": "One block per head, one row of blocks per layer (from 0); in "
    "a block the rows are the queries and the columns the keys, in token order, and the darker a "
    "cell the larger its |W| ({ramp}), from 0 to its layer's largest |W|, given above it.",
    "heads.others": "This model's {kind} layers are not softmax attention: they form no matrix "
    "of attention weights, so this page leaves them out (layers: {layers}).",
    "heads.attention_rows": "The rows below are its attention layers: {layers}.",
    "heads.before_sinks": "{arch} applies each head's learned sink after the softmax, as the "
    "factor σ(logsumexp of the row's scores − s) on the head's output: these maps are "
    "transformers' probabilities before that factor, each row summing to 1. The layer's "
    "problem (qkvcalc extract, the sink as `sinks`) has the sink's share in its weights, each "
    "row summing to less than 1.",
    "heads.tokens": "Tokens",
    "heads.layer": "layer {layer}",
    "heads.head_label": "h{head}",
    "heads.open_one": "Any head as a problem of its own: {command} | qkvcalc explain",
    "heads.too_wide": "{n} tokens make a block wider than this terminal: the blocks are cut at "
    "its edge; --format html shows them whole",
    "heads.page_title": "Every head at a glance",
    "heads.html_hint": "Click a head to open its weights and the explanation of its problem.",
    "heads.head_title": "Layer {layer}, head {head}",
    "heads.back": "Back to every head",
    "heads.command": "This head as a problem of its own, and its explanation:",
    "heads.no_explanation": "The explanation of every head is embedded in pages of at most "
    "{limit} heads in all, and this model has {count}: write this head's problem with the "
    "command above and explain it.",
    "heads.not_explained": "This head's explanation is not in the page: {reason}.",
    "heads.weights_caption": "Attention weights (rows: queries, columns: keys)",
    "heads.implicit_shown": "This model's {kind} layers form no matrix of attention weights, "
    "yet each of their heads computes one without forming it: a matrix W whose product with the "
    "values the head reads, W·V, is its output before the layer's norm. Their rows below draw W, "
    "marked implicit (layers: {layers}).",
    "heads.rows_and_implicit": "The rows below are its softmax-attention layers ({layers}) and "
    "its {kind} layers ({linear}, implicit).",
    "heads.title_implicit": "Attention weights of every head: {model} ({arch}, {dtype}); "
    "tokens: {n}; layers × heads: {layers} × {heads}, and the implicit matrices of the "
    "linear-attention layers × heads: {linear} × {linear_heads}",
    "heads.implicit_legend": "layer {layer}, {kind}, implicit: each block is the matrix W its "
    "head computes without forming it, not softmax probabilities: signed, its rows need not sum "
    "to 1. The shade is |W| on the same ramp ({ramp}), from 0 to this layer's largest |W|, "
    "{largest}; a {mark} after the shade marks a negative cell.",
    "heads.implicit_legend_html": "Layer {layer}, {kind}, implicit: each block is the matrix W "
    "its head computes without forming it, not softmax probabilities: signed, its rows need not "
    "sum to 1. Blue cells are positive and red ones negative, the deeper the larger |W|, from 0 "
    "to this layer's largest |W|, {largest}.",
    "heads.implicit": "implicit",
    "heads.implicit_caption": "The matrix W this head computes without forming it (rows: "
    "queries, columns: keys; W·V is the head's output before the layer's norm), not softmax "
    "probabilities: signed, its rows need not sum to 1",
    "heads.head_description_lightning": "Head {head} of the {heads} of {name}, as a problem of "
    "its own: its query, key and value columns and its own decay rate, without the RMSNorm over "
    "every head's output side by side, the output gate after it or the output projection: its "
    "output is the head's own output before that norm (W·V).",
    "help.heads": "Show every layer's every head's attention weights as a grid of small heatmaps, "
    "from one run of a Hugging Face model (needs qkvcalc[models]).",
    "help.heads.model": "A checkpoint folder (config.json and the weights), or a hub name where "
    "this machine can download.",
    "help.heads.ids": 'The token ids, split by spaces: "101 7592 102".',
    "help.heads.text": "Text for the model's tokenizer to turn into token ids.",
    "help.heads.format": "table (the terminal), html (a page: click a head to open its "
    "explanation) or json (qkvcalc.heads/1).",
    "help.heads.layer": "With --head: write that head's problem instead (layers from 0).",
    "help.heads.head": "With --layer: the head whose problem to write (heads from 1).",
    "help.heads.dtype": "The dtype of the run: auto (the checkpoint's own), float64, float32 "
    "or bfloat16.",
    "help.heads.output": "Write to this file instead of standard output (the page, the JSON "
    "or the head's problem).",
    # ---- qkvcalc check (issue 38): a person's own attention code, graded ----
    "help.check": "Grade your own attention function (FILE.py:FUNCTION) on problems from small "
    "to large: the first stage and cell that differ, the named mistake that explains it, and "
    "the smallest problem that shows it, worked out. With --stages: your stage tensors instead, "
    "no code run.",
    "help.check.target": "FILE.py:FUNCTION, your function (it runs in a child process); with "
    "--stages, the problem's JSON file (or - for stdin).",
    "help.check.stages": "An .npz or JSON file of your stage tensors by stage id (ID or ID@hH), "
    "or qkvcalc's own trace JSON: graded against the problem, no code run.",
    "help.check.preset": "With --stages: a bundled preset as the problem.",
    "help.check.torch": "Pass torch tensors (the default when FILE.py imports torch).",
    "help.check.problems": "How many problems to try (the planned ones first, then random ones).",
    "help.check.seed": "The seed of the random problems.",
    "help.check.time_limit": "Seconds one call of your function may take.",
    "help.check.format": "table (words and tables) or json (the qkvcalc.check/1 document).",
    "check.right": "{function} is right: it gave the right numbers on all {count} "
    "{count:problem|problems}.",
    "check.right_stages": "{function} is right: every stage it holds has the right numbers.",
    "check.error": "{function} raised on {count} of {total} {total:problem|problems}; where it "
    "returned, every number was right.",
    "check.wrong_named": "{function} is wrong: {mistake}.",
    "check.wrong_unnamed": "{function} is wrong, and none of the named mistakes explains every "
    "difference; the first one is below.",
    "check.at_head": " (head {head})",
    "check.first_cell": "First difference: stage {stage}{head}, cell [{row}, {col}]: yours "
    "{theirs}, right {right}.",
    "check.first_shape": "First difference: stage {stage}{head} has shape {theirs}; the right "
    "shape is {right}.",
    "check.raised_line": "Raised on the problem '{problem}': {type}: {message}",
    "check.raised_more": "… and {count} more not shown.",
    "check.smallest_title": "The smallest problem that shows it, worked out:",
    "check.beside_title": "Stage {stage}, the right numbers, with yours where they differ:",
    "check.yours": "yours",
    "check.right_word": "right",
    "check.beside_legend": "A cell marked ✗ shows {yours} first, then the right number.",
    "check.mistake.softmax_axis": "The softmax runs down each column (over the queries); it "
    "runs along each row, over the keys (axis -1), so each query's weights sum to 1 (0 where "
    "every key of the row is masked).",
    "check.mistake.no_scale": "The scores are not scaled; they are multiplied by 1/√d_k "
    "before the softmax.",
    "check.mistake.scale_dk": "The scores are divided by d_k; they are divided by √d_k, its "
    "square root.",
    "check.mistake.scale_twice": "The scale is applied twice; the scores are multiplied by "
    "1/√d_k once.",
    "check.mistake.scale_after_softmax": "The weights are scaled after the softmax; the scores "
    "are scaled before it, and the weights then sum to 1.",
    "check.mistake.kt_missing": "The scores are Q·K; a score compares query i with key j, so "
    "they are Q·Kᵀ.",
    "check.mistake.scores_transposed": "The scores are K·Qᵀ, turned on their side; in Q·Kᵀ row i "
    "is query i and column j key j.",
    "check.mistake.weights_transposed": "The output is Aᵀ·V; it is A·V, each query's weights "
    "times the values.",
    "check.mistake.mask_ignored": "The mask is left out; masked scores become −∞ before the "
    "softmax.",
    "check.mistake.mask_inverted": "The mask is read the wrong way round; True (1) means may "
    "attend, as in PyTorch's scaled_dot_product_attention.",
    "check.mistake.causal_diagonal": "The causal mask hides the diagonal too; a token may "
    "attend to itself and the tokens before it.",
    "check.mistake.causal_transposed": "The causal mask looks into the future (the upper "
    "triangle); query i may attend to keys 1…i, the lower triangle.",
    "check.mistake.mask_after_softmax": "The mask is applied after the softmax, so a row the "
    "mask cuts no longer sums to 1; masked scores become −∞ before it.",
    "check.mistake.masked_row_nan": "A row whose keys are all masked gives NaN (0/0); it gives "
    "weights 0 and output 0, as PyTorch's scaled_dot_product_attention does.",
    "check.mistake.masked_row_uniform": "A row whose keys are all masked gets equal weights (a "
    "finite fill such as finfo.min); it gives weights 0 and output 0.",
    "check.mistake.no_max_shift": "The softmax does not subtract each row's maximum, so large "
    "scores overflow (e^s = inf, inf/inf = NaN); e^(s − max) gives the same weights safely.",
    "check.mistake.heads_split": "The heads take every H-th column; head h takes the h-th block "
    "of d_k columns of Q, K and V.",
    "check.mistake.heads_concat": "The heads' outputs are interleaved column by column; they are "
    "laid side by side, head 1's d_v columns first.",
    "check.mistake.gqa_repeat": "The K/V heads are repeated as a whole (tile); consecutive query "
    "heads share one K/V head (repeat_interleave).",
    "check.mistake.rope_pairs": "RoPE turns the wrong pairs of dimensions: rotate_half pairs "
    "dimension i with i + R/2 (R: how many dimensions rotate), the interleaved layout (GPT-J) "
    "pairs neighbours, 1 with 2, 3 with 4, …, and the problem's rope.style says which one the "
    "model uses.",
    "check.mistake.layout_transposed": "The weights are read transposed (X·Wᵀ, PyTorch's out×in "
    "layout); here Q = X·W_Q, W_Q is d_model×d_k.",
    "check.mistake.bias_missing": "The biases are left out; Q = X·W_Q + b_Q, and the same for "
    "K, V and the output.",
    "check.mistake.wo_missing": "W_O is left out; the heads' outputs, side by side, are "
    "multiplied by W_O.",
    "check.mistake.nondeterministic": "Called twice on the same problem, it gave different "
    "numbers (dropout left on, or an unseeded random draw); attention itself is deterministic.",
    "check.no_file": "No such file: {path}. Give your function as FILE.py:FUNCTION.",
    "check.bad_function_name": "'{function}' is not a Python name; give your function as "
    "FILE.py:FUNCTION.",
    "check.no_target": "Name the function to check: qkvcalc check FILE.py:FUNCTION (or --stages "
    "FILE with the problem it comes from).",
    "check.target_form": "'{target}' does not name a function: give it as FILE.py:FUNCTION "
    "(or use --stages FILE with a problem).",
    "check.unreadable": "{path} cannot be read: {reason}",
    "check.no_torch": "{path} imports torch (or --torch was given), and torch is not installed.",
    "check.no_function": "{path} has no function '{function}'; its functions: {names}.",
    "check.not_callable": "'{function}' is a {type}, not a function that can be called.",
    "check.import_raised": "Importing {path} raised {type}: {message}",
    "check.child_ended": "The process that imports {path} ended before it could be checked.",
    "check.timed_out": "{function} did not return within {seconds} s on the problem "
    "'{problem}' (the time limit, --time-limit).",
    "check.problems_count": "--problems must be from 1 to 10,000 (got {count}).",
    "check.time_limit": "--time-limit must be a number of seconds greater than 0 (got {seconds}).",
    "check.unknown_parameter": "{function} takes a parameter '{name}' that check cannot fill; "
    "it passes q, k, v (or query, key, value) or x, wq, wk, wv, and optionally mask, causal, "
    "scale, wo, heads, kv_heads and the biases bq, bk, bv, bo (other parameters need a "
    "default).",
    "check.no_roles": "{function}({params}) cannot be called: it needs parameters named q, k, v "
    "(or query, key, value), or x, wq, wk, wv.",
    "check.bad_return": "{function} returned a {type}; it must return the output (an array or "
    "tensor), a tuple (output, weights), or a dict of stages by id with 'output'.",
    "check.no_output_stage": "{function} returned a dict without 'output'; a dict of stages "
    "must hold the output under the id 'output'.",
    "check.output_shape": "{function} returned an output of shape {theirs} on the problem "
    "'{problem}', where the output is {right}: one row per query, one column per value "
    "dimension (n×d_v, the heads side by side; n×d_model after W_O), a dict's 'output' too.",
    "check.stage_not_numbers": "{path}: the stage '{stage}' is not a matrix of numbers.",
    "check.stages_not_object": '{path} is not an object of stages by id ({{"weights": '
    "[[…]]}}) nor qkvcalc's trace JSON.",
    "check.unknown_stage": "{path} holds '{stage}', which is not a stage of this problem; its "
    "stages: {known}.",
    "check.stages_empty": "{path} holds no stages; this problem's stages: {known}.",
    "check.stages_without_problem": "--stages needs the problem the stages come from: a JSON "
    "file (or -) or --preset NAME.",
    "check.preset_without_stages": "--preset goes with --stages; a function is checked on "
    "problems of its own (FILE.py:FUNCTION).",
    # ---- the backward pass in tiles (issue 21) ----
    "stage.lse.title": "Backward in tiles: the log-sum-exp LSE",
    "stage.lse.why": "The one number per row the tiled forward keeps for its backward: "
    "LSE = m + log ℓ, from its last running maximum and running sum. With it every weight can be "
    "recomputed later as e^(s − LSE), block by block, so no n×m table of weights is ever stored.",
    "stage.rowdot_o.title": "Backward in tiles: D = rowsum(dO ⊙ O)",
    "stage.rowdot_o.why": "The softmax backward needs each row's r = Σⱼ Aᵢⱼ·dAᵢⱼ, which would "
    "read a whole row of weights. Since dA = dO·Vᵀ and O = A·V, it is also Σ dO ⊙ O, the output "
    "row against its gradient: FlashAttention-2 computes it once, before the blocks.",
    "stage.rowdot_o.attend.title": "Backward in tiles: the row term D, from the targets",
    "stage.rowdot_o.attend.why": "This loss reads the weights, not the output, so D = Σⱼ Aᵢⱼ·dAᵢⱼ "
    "has a single term, at the target key: A[i, tᵢ]·(−1 / A[i, tᵢ]) = −1, with the target's "
    "weight recomputed as e^(S[i, tᵢ] − LSE); 0 for a query without a target.",
    "stage.block_p.title": "Backward in tiles: the block's weights P_b",
    "stage.block_p.why": "The weights of this block's keys, recomputed from its logits and LSE: "
    "P_b = e^(S_b − LSE). Recomputing is cheaper than storing them, which is the trick of "
    "FlashAttention's backward. A masked key gets exactly 0.",
    "stage.grad_v_acc.title": "Backward in tiles: the block's rows of dV",
    "stage.grad_v_acc.why": "dV = Aᵀ·dO, and the rows of dV that belong to this block's keys read "
    "only this block's weights: dV_b = P_bᵀ·dO.",
    "stage.block_grad_p.title": "Backward in tiles: the block's dP_b = dO·V_bᵀ",
    "stage.block_grad_p.why": "The gradient of this block's weights: each output row's gradient "
    "against the value rows of the block's keys, as dA = dO·Vᵀ, a block of columns at a time.",
    "stage.block_grad_p.attend.title": "Backward in tiles: the block's dP_b, from the targets",
    "stage.block_grad_p.attend.why": "The loss's gradient at this block's weights: −1 / P_b[i, tᵢ] "
    "where a query's target key is in this block, 0 everywhere else.",
    "stage.block_grad_s.title": "Backward in tiles: the block's dS_b = P_b ⊙ (dP_b − D)",
    "stage.block_grad_s.why": "The softmax backward of this block's columns: each weight "
    "times how far its key's dP is from the row's D (dP_b − D). D was computed before the "
    "blocks, so the block needs nothing from the others.",
    "stage.grad_q_acc.title": "Backward in tiles: dQ accumulated",
    "stage.grad_q_acc.why": "Every block of keys adds its share to the gradient of the queries: "
    "dQ_b = dQ_(b−1) + d(Q·Kᵀ)_b·K_b. After the last block it is the whole dQ.",
    "stage.grad_k_acc.title": "Backward in tiles: the block's rows of dK",
    "stage.grad_k_acc.why": "The keys of this block get their gradient from this block's columns "
    "alone: dK_b = d(Q·Kᵀ)_bᵀ·Q.",
    "stage.grad_q_side.tiles.title": "Backward: gradient of the queries, after the last block",
    "stage.grad_q_side.tiles.why": "dQ summed over every block of keys: the same Σⱼ "
    "d(Q·Kᵀ)ᵢⱼ·kⱼ as without tiles, added a block at a time.",
    "stage.grad_k_acc.total.title": "Backward: gradient of the keys, the blocks' rows stacked",
    "stage.grad_k_acc.total.why": "Each block gave the rows of dK of its own keys; one under "
    "another they are the whole dK.",
    "stage.grad_v_acc.total.title": "Backward: gradient of V, the blocks' rows stacked",
    "stage.grad_v_acc.total.why": "Each block gave the rows of dV of its own keys; one under "
    "another they are the whole dV.",
    "note.tiles_lse": "Saved by the forward: a row whose every key is masked has ℓ = 0 and "
    "LSE = −∞, and its weights below are all 0.",
    "note.tiles_rowdot_o": "Σⱼ Aᵢⱼ·dAᵢⱼ = Σⱼ Aᵢⱼ·(dOᵢ·vⱼ) = dOᵢ·(Σⱼ Aᵢⱼ·vⱼ) = dOᵢ·Oᵢ: the row "
    "term of the softmax backward, without a row of weights.",
    "note.tiles_backward_equal": "Added up block by block ({blocks} in all), the totals equal "
    "the backward without tiles (dQ, dK and dV of this head; largest difference {gap}): every "
    "gradient is a sum over the keys, and the blocks only add it in another order.",
    # ---- decoding with a KV cache, attention in tiles ---------------------------------------
    "stage.k_cache.title": "Key cache",
    "stage.k_cache.why": "The keys of every token so far. A decode step computes the key of its "
    "new token only and appends it: the earlier rows are read from the cache, never computed "
    "again.",
    "stage.v_cache.title": "Value cache",
    "stage.v_cache.why": "The values of every token so far, kept beside the keys: the new token's "
    "value row is appended, the earlier rows are reused.",
    "stage.output.decode.title": "Output (every step's rows stacked)",
    "stage.output.decode.why": "Each step gave the output rows of its own tokens; stacked in "
    "order they are the output of the whole sequence, the same as computing everything at once "
    "with the causal mask.",
    "stage.block_scores.title": "Scores of one block of keys",
    "note.tiles_whole": "Shown whole for reference: qkvcalc computes this table and the ones "
    "after it whole, so that the blocks below can be compared with them; FlashAttention itself "
    "never holds them at once, it computes each block of keys' scores as it goes.",
    "stage.block_scores.why": "FlashAttention never holds a whole row of scores: it reads the "
    "keys B at a time, and this is the part of each row that falls in this block.",
    "stage.block_max.title": "Maximum of the block",
    "stage.block_max.why": "The largest score of each row within this block (−∞ if every key "
    "of the block is masked).",
    "stage.running_max.title": "Running maximum m",
    "stage.running_max.why": "The largest score of each row seen so far: the larger of the "
    "previous running maximum and this block's maximum. The exponentials subtract it, so none "
    "can overflow.",
    "stage.correction.title": "Correction e^(m_old − m_new)",
    "stage.correction.why": "When the running maximum grows, everything summed so far was "
    "shifted by the old maximum; multiplying it by e^(m_old − m_new) shifts it by the new one "
    "instead. It is 1 where the maximum did not change.",
    "stage.block_exp.title": "Exponentials of the block",
    "stage.block_exp.why": "Each score of the block minus the running maximum, exponentiated: "
    "every value is at most 1.",
    "stage.running_sum.title": "Running sum ℓ",
    "stage.running_sum.why": "The softmax denominator so far: the previous sum rescaled by the "
    "correction, plus this block's exponentials.",
    "stage.acc.title": "Running output O (not yet divided)",
    "stage.acc.why": "The weighted sum of values so far, before dividing by ℓ: the previous one "
    "rescaled by the correction, plus this block's exponentials times its value rows.",
    "stage.output.tiles.title": "Output = O / ℓ",
    "stage.output.tiles.why": "One division at the very end turns the running output into the "
    "softmax-weighted sum of values.",
    "ui.step": "decode step {step}",
    "ui.block": "block {block}",
    "ui.variant.decode": "a KV cache, decoding one token at a time (prefill {prefill})",
    "ui.variant.tiles": "softmax in tiles of {tiles} {tiles:key|keys}",
    "note.decode_prefill": "Step 0, the prefill: the first {count} {count:token|tokens} (rows "
    "1–{last}) go through together, as one causal attention; their keys and values fill the cache.",
    "note.decode_prefill_one": "Step 0, the prefill: the first token (row 1) goes through "
    "alone, as a causal attention of one token; its key and value start the cache.",
    "note.decode_step": "Step {step}: token {row} ({token}, position {pos}) alone. Only its "
    "query row is computed; it attends to every key in the cache.",
    "note.decode_cache_start": "The cache starts with {name} of rows 1–{rows}.",
    "note.decode_saved": "Rows {old} come from the cache of step {step} unchanged (they are "
    "never computed again); only row {row}, the new token's, is computed. That is what the "
    "cache saves: each step projects one token instead of all of them.",
    "note.decode_memory": "What it costs: each token keeps its keys and values, 2 × layers × "
    "kv_heads × d_k numbers per token (here, one layer, kv_heads × (d_k + d_v) = {kv_heads} × "
    "({d_k} + {d_v}) = {per_token}); {tokens} {tokens:token holds|tokens hold} {total} numbers "
    "per layer.",
    "note.decode_gqa": "Grouped-query attention shrinks it: with kv_heads = {kv_heads} for "
    "heads = {heads}, the cache holds {per_token} numbers per token instead of {full}, {ratio} "
    "times fewer (only the K/V heads are cached; queries are never kept).",
    "note.decode_mask_prefill": "The prefill's mask is an ordinary causal mask, {count}×{count}.",
    "note.decode_bottom_right": "One query and {keys} {keys:key|keys}: the mask is the last row "
    "of the causal mask, aligned bottom-right (the query is at the newest position, token {row}, "
    "and may see every cached key). Aligned top-left, as is_causal=True does for a 1×{keys} mask, "
    "it would see key 1 only: a classic cache bug.",
    "note.decode_equal": "Stacked, the rows of the {steps} {steps:step|steps} (the prefill is "
    "step 0) equal the ordinary causal run computed all at once (largest difference {gap}).",
    "note.tiles_block": "Block {block} of {blocks}: keys {keys}.",
    "note.tiles_running_max": "Before the first block m = −∞, so m_1 is the first block's maximum.",
    "note.tiles_correction_first": "Before the first block m = −∞ and ℓ = 0, O = 0: there is "
    "nothing to rescale (e^(−∞) = 0).",
    "note.tiles_correction": "1 where the running maximum did not grow; less than 1 where it "
    "did, and then the earlier sum and output are scaled down by it.",
    "note.tiles_running_sum": "ℓ_b = ℓ_(b−1)·e^(m_(b−1) − m_b) + Σ e^(s − m_b), starting from "
    "ℓ_0 = 0.",
    "note.tiles_acc": "O_b = O_(b−1)·e^(m_(b−1) − m_b) + E_b·V_b, starting from O_0 = 0: not yet "
    "divided by ℓ.",
    "note.tiles_equal": "Equal to the ordinary softmax(S)·V over the whole row (largest "
    "difference {gap}): each correction multiplied every earlier e^(s − m_old) by "
    "e^(m_old − m_new), so at the end every term is e^(s − m_final), as if the final maximum "
    "had been subtracted all along; and O and ℓ were rescaled alike, so O / ℓ is the same.",
    "hint.decode_q": "{cell} is row {i} of this step's X rows ({rows}) times column {j} of W_Q.",
    "hint.decode_rows": "{cell} is row {i} of this step's rows of X ({rows}) times column {j} of "
    "{w}, plus the bias where there is one.",
    "hint.decode_stack": "The rows already in {name} are copied from the previous step; the new "
    "rows ({rows}) are copied from this step's {new}.",
    "hint.block_max": "{cell} = the largest entry of row {i} of S_{block}.",
    "hint.running_max": "{cell} = max(m_{before}[{i}], max S_{block}[{i}]) (for block 1: max "
    "S_1[{i}]).",
    "hint.correction": "{cell} = e^(m_{before}[{i}] − m_{block}[{i}]) (block 1: 0).",
    "hint.block_exp": "{cell} = e^(S_{block}[{i},{j}] − m_{block}[{i}]).",
    "hint.running_sum": "{cell} = ℓ_{before}[{i}]·c_{block}[{i}] + the sum of row {i} of "
    "E_{block}.",
    "hint.acc": "{cell} = O_{before}[{i},{j}]·c_{block}[{i}] + row {i} of E_{block} times "
    "column {j} of this block's V rows.",
    "hint.tiles_output": "{cell} = O_{block}[{i},{j}] / ℓ_{block}[{i}].",
    "help.explain.decode": "Decode with a KV cache: a prefill of P tokens (0 for none), then one "
    "step per later token, each with its growing cache (a causal run).",
    "help.explain.tiles": "Compute the softmax FlashAttention's way, over blocks of B keys: "
    "running max, correction, running sum and output per block.",
    "decode.range": "decode = {value}: the prefill length P must be a whole number from 0 to "
    "{last} (n − 1, with n = {n} {n:token|tokens}), so that at least one token is decoded step by "
    "step; P = 0 decodes every token.",
    "decode.mask": "decode needs the causal mask (mask is {mask}): a token being generated sees "
    "only itself and the tokens before it. Leave mask out (decode makes it causal) or give "
    "key_padding for padding.",
    "decode.cross": "decode shows self-attention with a cache of the sequence's own keys, one "
    "more at each step; with a source (cross-attention, n = {n}, m = {m}) the source's K and V "
    "are computed once and reused at every step, so they never grow and there is no growing "
    "cache to show. Leave out source or decode.",
    "decode.needs_x": "decode builds its cache from X·W_K and X·W_V one token at a time: give x, "
    "wq, wk and wv (not Q, K, V directly).",
    "tiles.range": "tiles = {value}: the block size B must be a whole number of keys, at least 1 "
    "(B ≥ m = {m} gives one block, the ordinary softmax).",
    "tiles.too_many_blocks": "tiles = {tiles} cuts the {m} keys into {blocks} blocks; qkvcalc "
    "shows at most {limit} blocks, so take tiles = {least} or more",
    "tiles.with_decode": "decode and tiles together (decode = {decode}, tiles = {tiles}): "
    "choose one, each is shown step by step on its own.",
    "note.decode_rope": "Rotated by the position of each new token ({positions}), once: a cached "
    "key keeps the rotation of its own position, so the step's positions must continue the "
    "prefill's (an offset here is the classic cache bug).",
    # ---- qkvcalc train (issue 21) ----
    "preset.learn.description": "Training: the pronoun sentence with random weights, where 'it' "
    "does not yet look at 'cat'; qkvcalc train teaches it to",
    "preset.learn.reference": "Made for qkvcalc. The sentence and X are the pronoun preset's "
    "(columns: noun, pronoun, verb or adjective, other word); W_Q, W_K and W_V are random: "
    "numpy.random.default_rng(25).standard_normal((4, 2)) · 0.5 for W_Q, W_K, W_V in that "
    "order, rounded to 2 decimals. With them 'it' gives 'cat' 10% of its weight and itself the "
    "most (30%). attend asks only 'it' to look at 'cat' (key 2); the other words have no target "
    "(null), so the loss is the one link the story is about, L = −log A[it, cat], and what the "
    "other words look at is left free. qkvcalc train --preset learn (20 steps, η = 0.5) moves "
    "W_Q and W_K until 'it' gives 'cat' 98%; W_V does not move, since the loss reads the "
    "attention weights alone. attend is a teaching shortcut: a real model is never told where to "
    "look, and learns W_Q, W_K and W_V from a loss on its output (the referent preset).",
    "help.train": "Train the weights by gradient descent, from the problem's attend or target, "
    "and show the loss at every step, the weights and the attention weights before and after.",
    "help.train.source": "A JSON (or .npz) file of the input format with attend or target, or "
    "- for standard input.",
    "help.train.preset": "A bundled preset (learn, referent and referent64 are made for training).",
    "help.train.attend": 'The key each query should attend to, 1-based ("2 - 1": - for none), '
    "instead of the problem's own loss: L = −Σᵢ log A[i, tᵢ].",
    "help.train.target": "A target output T (n × d_out, as explain's --x), instead of the "
    "problem's own loss: L = ½·Σ(O − T)².",
    "help.train.steps": "Updates of gradient descent to make, from 1 to 10,000 (default 20).",
    "help.train.lr": "The learning rate η of W ← W − η·∂L/∂W, a number > 0 (default 0.5).",
    "help.train.freeze": 'Weights that do not move, split by commas: "wv,wo". Names: wq, wk, '
    'wv, wo, bq, bk, bv, bo, and those the problem\'s own layer adds, each as "Learned:" shows '
    "it or in lower case without \"_\" (MLA's W_DQ or wdq, …; a linear layer's w_norm or norm, "
    "…); docs/train.md lists them all.",
    "help.train.output": "Write to this file, by its extension: .svg the loss curve, .html the "
    "page, .txt the text; .json (or any other name) the trained problem, a JSON problem qkvcalc "
    "explain reads (with --format json, the whole training document).",
    "help.train.format": "What to print: table, txt, json (the qkvcalc.train/1 document), svg "
    "(the loss curve) or html (a page with the curve).",
    "help.train.step": "Show one update at a time in the terminal: Enter or Space next, q quit.",
    "help.studio": "Edit any number of a problem and watch every stage follow: the matrices "
    "as boxes to type in, every stage as a table, the focused cell's arithmetic below (a Textual "
    "app in the terminal, or in a browser with --serve).",
    "help.studio.source": "A JSON (or .npz) file of the input format.",
    "help.studio.preset": "A bundled preset (qkvcalc presets list).",
    "help.studio.random": "Random small integers (as qkvcalc quiz --random).",
    "help.studio.seed": "With --random: the seed, to have the same numbers again.",
    "help.studio.size": 'With --random: "n,d_model" (default "3,2").',
    "help.studio.save": "Where s saves the problem, as JSON (default qkvcalc-studio.json).",
    "help.studio.serve": "Serve the studio to a browser (needs qkvcalc[serve]) instead of "
    "running it in this terminal.",
    "help.studio.host": "With --serve: the address to listen on (default 127.0.0.1, this "
    "machine alone; 0.0.0.0 lets the classroom's network in).",
    "help.studio.port": "With --serve: the port (default 8000).",
    "train.title": "qkvcalc train · {name}",
    "train.title_unnamed": "qkvcalc train",
    "train.trained_description_unnamed": "Trained with qkvcalc train: {done} {done:step|steps} of "
    "gradient descent with η = {lr}.",
    "train.header": "Gradient descent (steps: {steps}, learning rate η = {lr}), each step "
    "W ← W − η·∂L/∂W.",
    "train.stopped": "Gradient descent, stopped by Ctrl-C after step {done} of {steps}, "
    "learning rate η = {lr}: what was learned so far.",
    "train.loss_attend": "Loss L = −Σᵢ log A[i, tᵢ]: the smaller L, the more weight each query "
    "gives its target key (attend).",
    "train.loss_target": "Loss L = ½·Σ(O − T)²: the smaller L, the closer the output O is to "
    "the target T.",
    "train.learned": "Learned: {names}.",
    "train.frozen": "Frozen (--freeze, not moved): {names}.",
    "train.indexer_fixed": "The sparse-attention indexer's weights (W_IQ, W_IK, its key's "
    "LayerNorm, W_w) are not moved: the loss gives them no gradient (its top-k is a choice, "
    "held fixed as a mask in the backward pass). Each step trains the latent attention, and the "
    "indexer chooses each query's keys again with its weights as given.",
    "train.unreached": "Not moved, because the loss does not reach them (no gradient): {names}.",
    "train.losses": "The loss at each step",
    "train.col_step": "step",
    "train.col_loss": "L",
    "train.col_change": "change",
    "train.elided": "{count} {count:step|steps} not shown",
    "train.spark": "From {first} to {last}.",
    "train.weights": "The weights before and after (Δ: what they moved)",
    "train.unchanged": "{name} did not move:",
    "train.before": "before",
    "train.after": "after",
    "train.attention": "The attention weights before and after",
    "train.target": "'{query}' → '{key}': {before} → {after}",
    "train.target_head": "head {head}: '{query}' → '{key}': {before} → {after}",
    "train.update": "update {step} of {steps}",
    "train.update_loss": "The loss: {before} before this update, {after} after it.",
    "train.update_rule": "Each learned weight W moves by ΔW = −η·∂L/∂W with η = {lr}, so "
    "W' = W + ΔW.",
    "train.update_keys": "Enter or Space: next update · q: quit",
    "train.plot_title": "The loss L at each step",
    "train.trained_description": "Trained with qkvcalc train: {done} {done:step|steps} of "
    "gradient descent with η = {lr}, starting from {name}.",
    "train.steps": "--steps must be a whole number from 1 to {limit}, not {value}.",
    "train.lr": "--lr (the learning rate η) must be a number greater than 0, not {value}.",
    "train.loss": "qkvcalc train needs a loss to descend: the key attend (the key each query "
    "should look at) or target (the output to reach); this problem has {given}. grad_output "
    "gives a gradient but no loss to make smaller.",
    "train.loss_none": "none",
    "train.no_weights": "qkvcalc train learns W_Q, W_K, W_V (and W_O), but this problem gives "
    "Q, K and V directly: give X and the weights instead.",
    "train.schedule": "qkvcalc train runs the plain forward and backward pass, so it does not "
    "take the key {option}.",
    "train.freeze_unknown": "--freeze: {name} is not one of the weights ({names}).",
    "train.freeze_missing": "--freeze: this problem has no {names} (it has {has}).",
    "train.attend_hidden": "After step {step}, query {row} may no longer see key {key}, its "
    "target (attend[{row}] = {key}): the keys each query may see are chosen from the moved weights "
    "(the sparse-attention indexer's top-k), and a query cannot be taught to look at a key it may "
    "not see. Train fewer steps or with a smaller --lr, or give targets among the keys it keeps.",
    "train.all_frozen": "--freeze names every weight the problem has, so nothing could move.",
    "train.too_big": "Training for --steps {steps} a problem of {numbers} weights and attention "
    "weights keeps more than {limit} numbers: make --steps at most {most}.",
    "train.diverged": "The loss is no longer a finite number at step {step}: the learning rate "
    "η = {lr} is too large for these numbers; try a smaller --lr.",
    "train.nothing_reached": "The loss does not reach the weights left free ({names}): they "
    "have no gradient, so nothing would move.",
    "train.step_format": "--step shows the updates in the terminal, so it does not combine "
    "with --format {format} or --output.",
    "train.output_not_json": "--output {path}: train writes the trained problem (.json), the loss "
    "curve (.svg), the page (.html) or the text (.txt), but the name ends in {ext}. Name the file "
    "with one of those.",
    # ---- the interactive page (--format html: qkvcalc/render/page.py, page.js) ------------
    "page.language_name": "English",
    "page.present": "Present (p)",
    "page.document": "Document (Esc)",
    "page.keys_title": "Keys of this page",
    "page.key_next": "next stage (presenter mode)",
    "page.key_back": "previous stage (presenter mode)",
    "page.key_number": "type a stage number, then Enter: go to that stage (presenter mode)",
    "page.key_first_last": "first stage, last stage (presenter mode)",
    "page.key_group": "next decode step or block of keys; back to the start of this one, or of the "
    "one before (presenter mode)",
    "page.key_help": "show or hide these keys",
    "page.key_why": "show or hide the explanation of this stage (presenter mode)",
    "page.why_open": "Show the explanation (w)",
    "page.why_close": "Hide the explanation (w)",
    "page.key_exit": "close this list; leave presenter mode",
    "page.key_present": "presenter mode on or off: one stage per screen",
    "page.key_cells": "Tab reaches each table; the arrows move from cell to cell and show each "
    "cell's arithmetic",
    "page.language": "Switch the language of the page",
    "page.why_given": "Given: this table is an input of the calculation, with no arithmetic of "
    "its own.",
    "page.why_masked": "Masked: this query may not attend to this key, so its score is −∞ "
    "whatever it was (and its weight will be 0).",
    "page.why_kept": "Not masked: the score passes through unchanged.",
    "page.why_copy": "The same number as the marked cell, carried over.",
    "page.why_none": "Its arithmetic is not written out on this page; the marked cells are the "
    "shown cells it was computed from.",
    "page.why_unmarked": "Its arithmetic is not written out on this page, and none of the cells "
    "it was computed from is shown here.",
    "page.why_masked_grad": "Masked: this query does not attend to this key, so no gradient "
    "reaches this cell: it is 0.",
    "page.picture_title": "Attention weights as pictures",
    "page.picture_why": "Each head's weights: a heatmap (one square per query and key, darker is "
    "more weight) or lines from each query's token to each key's token, as thick as the weight. "
    "Click a square or a line to see that cell in the weights table and its arithmetic.",
    "page.heatmap": "Heatmap",
    "page.lines": "Lines",
    "page.head": "Head {head}",
    "page.legend": "Weight:",
    "page.picture_part": "The picture shows the first {n} of {total_n} queries and the first {m} "
    "of {total_m} keys.",
    "page.picture_cell": "{query} → {key}: weight {weight}",
    "page.not_shown": "This cell is not among the cells the weights table shows on this page.",
    "page.two_langs_html": "--lang {langs} puts both languages on one page, which only --format "
    "html does (the format here is {format}): give one language, or write html.",
    "help.explain.lang": "en or ko (default: from QKVCALC_LANG, LC_ALL, LANG); en,ko or "
    "ko,en with --format html: one page in both languages with a switch, the first shown "
    "first.",
    # ---- the backward pass (--backward): how attention learns ---------------------------
    "backward.no_loss": "--backward needs a place for the gradient to start: give one of "
    "grad_output (dL/dO, n × d_out), target (T, n × d_out; L = ½·Σ(O − T)²) or attend (one key "
    "per query, 1-based; L = −Σᵢ log A[i, tᵢ])",
    "backward.no_loss_mixer": "--backward needs a place for the gradient to start: give "
    "grad_output (dL/dO, n × d_out) or target (T, n × d_out; L = ½·Σ(O − T)²) (attend's loss is "
    "on softmax weights, which a linear-attention layer has none of)",
    "backward.attend_mixer": "attend puts the loss on softmax weights, and a linear-attention "
    "layer has none: it never forms an n×n matrix of weights, and the W qkvcalc shows beside it "
    "(what its state adds up to) has rows that need not sum to 1. Give target (explain "
    "--backward takes grad_output too)",
    "backward.decode": "--backward runs on the whole sequence at once: drop decode (a KV cache "
    "changes when the numbers are computed, not what the gradients are)",
    "loss.several": "give one place for the gradient to start, not several: {keys}",
    "loss.shape": "{field} is {rows}×{cols} but the output is n × d_out = {n}×{d_out}: one row "
    "per query, one column per output column",
    "loss.attend_count": "attend needs one key per query: {count} given for n = {n} "
    "{n:query|queries} (null for a query with no target)",
    "loss.attend_count_typed": "attend needs one key per query: {count} given for n = {n} "
    "{n:query|queries} (- for a query with no target)",
    "loss.attend_key": "attend[{row}] is {value}: a key's number from 1 to m = {m} (1-based, as "
    "the tables count), or null for no target",
    "loss.attend_key_typed": "attend[{row}] is {value}: a key's number from 1 to m = {m} (1-based, "
    "as the tables count), or - for no target",
    "loss.attend_empty": "attend names no key at all: give at least one query a target key",
    "loss.attend_masked": "attend[{row}] = {key}, but the mask hides key {key} from query {row}: "
    "a query cannot be taught to look at a key it may not see",
    "stage.grad_output.target.title": "Backward: the loss's gradient dO",
    "stage.grad_output.target.why": "Learning starts from a number that says how wrong the "
    "output is: here L = ½·Σ(O − T)², half the squared distance to the target T. Its gradient "
    "dL/dO is simply O − T: each cell says, by its sign and size, how that output cell pulls "
    "on the loss (it should move the other way, toward T).",
    "stage.grad_output.given.title": "Backward: the gradient dO, given",
    "stage.grad_output.given.why": "dL/dO is given directly, as PyTorch's "
    "out.backward(grad) takes it: whatever the loss further up is, each output cell lowers it "
    "by moving against this gradient. Everything below is the chain rule applied to it, stage "
    "by stage, in reverse.",
    "stage.grad_output.head.title": "Backward: this head's share of the gradient",
    "stage.grad_output.head.why": "Each head wrote its own columns of the concatenation, so each "
    "head receives exactly those columns of d(concat) back, and nothing of the others'.",
    "stage.grad_concat.title": "Backward through W_O",
    "stage.grad_concat.why": "The output was concat·W_O, so the gradient reaching the "
    "concatenation is dO·W_Oᵀ: every concatenated column collects what it contributed to every "
    "output column.",
    "stage.grad_concat.copy.title": "Backward through the concatenation",
    "stage.grad_concat.copy.why": "Without W_O the output is the concatenation itself, so its "
    "gradient passes through unchanged.",
    "stage.grad_wo.title": "Gradient of W_O",
    "stage.grad_wo.why": "W_O[a, b] multiplied concatenated column a into output column b for "
    "every token, so its gradient sums concat[i, a]·dO[i, b] over the tokens: concatᵀ·dO. A "
    "step of gradient descent moves W_O against it.",
    "stage.grad_bo.title": "Gradient of b_O",
    "stage.grad_bo.why": "b_O is added to every row, so each of its entries collects the "
    "gradient of its column from every token: the column sums of dO.",
    "stage.grad_v.title": "Backward: gradient of V",
    "stage.grad_v.why": "The output was A·V: value row j reached query i with weight Aᵢⱼ. So V's "
    "gradient is Aᵀ·dO: each value row collects the output gradients of the queries that read "
    "it, weighted by how much they read it. A value nobody attends to gets no gradient.",
    "stage.grad_weights.title": "Backward: gradient of the weights A",
    "stage.grad_weights.why": "dA = dO·Vᵀ: raising weight Aᵢⱼ would add more of value row j "
    "to output row i, so its gradient is the dot product of output row i's gradient with "
    "value row j. The better value j points the way output i should go (−dOᵢ), the more "
    "negative it is.",
    "stage.grad_weights.attend.title": "Backward: gradient of the weights, from the targets",
    "stage.grad_weights.attend.why": "The loss −Σᵢ log A[i, tᵢ] asks each query to put its weight "
    'on its target key tᵢ: the question "which token should it have looked at". Its gradient is '
    "−1/A[i, tᵢ] at the target and 0 elsewhere: the smaller that weight is now, the harder the "
    "push. It is a teaching shortcut: a real model is never told where to look, and learns W_Q "
    "and W_K from its prediction error, which reaches A through the output (--target); with "
    "several heads, this loss pushes every head toward the same key.",
    "stage.softmax_rowdot.title": "Softmax backward, part 1: the row term",
    "stage.softmax_rowdot.why": "Raising one logit takes weight from every other key of the row: "
    "the softmax shares out each row as a whole. rᵢ = Σⱼ Aᵢⱼ·dAᵢⱼ is the row's dA averaged with "
    "the weights A; a sink's share, when there is one, counts with dA = 0. It is the baseline "
    "each key's dA is measured against.",
    "stage.grad_logits.title": "Softmax backward, part 2: gradient of the logits",
    "stage.grad_logits.why": "dS = A ⊙ (dA − r): a logit's gradient is its weight times how far "
    "its key's dA is from the row's average r. A key that would help more than the average (dA < "
    "r) is pushed up, one that would help less (dA > r) down, each in proportion to its weight (a "
    "masked key, of weight 0, not at all). Each weight's own derivative Aᵢⱼ·(1 − Aᵢⱼ) is small "
    "near 0 and near 1, so a saturated softmax passes little back of a bounded dA (a loss that "
    "reaches A through the output): that is why the scores are scaled. A dA that grows as its "
    "weight shrinks, as −1/A does under attend, is not held back.",
    "stage.grad_back.mask.title": "Backward through the mask",
    "stage.grad_back.mask.why": "A masked logit was replaced by −∞ whatever its score was, "
    "so its score gets exactly 0 gradient: a key that cannot be seen cannot be learned from. "
    "[M ≠ −∞] is 1 where the key is allowed and 0 where it is masked.",
    "stage.grad_back.scale.title": "Backward through the scaling",
    "stage.grad_back.scale.why": "The scores were multiplied by the scale, so their "
    "gradient is the logits' gradient times the same scale: a scale below 1, such as the default "
    "1/√d_k (there to keep the softmax from saturating), shrinks what flows back by the same "
    "factor as it shrank the scores.",
    "stage.grad_back.add.title": "Backward through the score bias",
    "stage.grad_back.add.why": "The bias B was added and is not learned here, so the gradient "
    "passes through to the scaled scores unchanged.",
    "stage.grad_back.softcap.title": "Backward through the softcap",
    "stage.grad_back.softcap.why": "The derivative of c·tanh(s/c) is 1 − tanh²(s/c): about 1 for "
    "small scores, near 0 where the capped value nears ±c (scores much larger than c in size). "
    "The cap is there to bound the logits (none goes past ±c); that a capped score then learns "
    "little is a side effect of it, not its purpose.",
    "stage.grad_back.rope.title": "Backward through RoPE",
    "stage.grad_back.rope.why": "RoPE turned each pair of dimensions by the angle φ of its "
    "position. A rotation's transpose is the rotation back, so the gradient is turned by −φ "
    "pair by pair: the same angles, the other way.",
    "stage.grad_back.rmsnorm.title": "Backward through the q/k norm",
    "stage.grad_back.rmsnorm.why": "The norm multiplied each row by ρ = 1/√(mean(x²) + ε) and "
    "by w. Its backward has two parts: the gradient scaled the same way, ρ·(w ⊙ g), minus the "
    "part that would only change the row's length, which the norm undoes.",
    "stage.grad_q_side.title": "Backward: gradient of the queries",
    "stage.grad_q_side.why": "Score i,j was qᵢ·kⱼ, so query row i gets Σⱼ d(Q·Kᵀ)ᵢⱼ·kⱼ: it is "
    "pulled toward keys whose scores should rise and pushed from those whose scores should "
    "fall.",
    "stage.grad_k_side.title": "Backward: gradient of the keys",
    "stage.grad_k_side.why": "The same product seen from the keys: key row j gets "
    "Σᵢ d(Q·Kᵀ)ᵢⱼ·qᵢ, the queries' rows weighted by how each of its scores should change.",
    "stage.grad_wq.title": "Gradient of W_Q",
    "stage.grad_wq.why": "Q = X·W_Q, so dW_Q = Xᵀ·dQ: each weight collects, over the tokens, its "
    "input number times the gradient of the query cell it fed. This is how attention learns: "
    "W_Q moves a small step against this matrix, and the queries of every sentence change.",
    "stage.grad_wk.title": "Gradient of W_K",
    "stage.grad_wk.why": "K = X·W_K (the source's rows in cross-attention), so dW_K = Xᵀ·dK: "
    "what every key should have offered, turned into a change of the one matrix that makes "
    "keys.",
    "stage.grad_wv.title": "Gradient of W_V",
    "stage.grad_wv.why": "V = X·W_V, so dW_V = Xᵀ·dV: the change of the matrix that makes "
    "values, from what every value should have carried.",
    "stage.grad_bq.title": "Gradient of b_Q",
    "stage.grad_bq.why": "b_Q is added to every query row, so its gradient is the column sums "
    "of dQ.",
    "stage.grad_bk.title": "Gradient of b_K",
    "stage.grad_bk.why": "b_K is added to every key row, so its gradient is the column sums of dK.",
    "stage.grad_bv.title": "Gradient of b_V",
    "stage.grad_bv.why": "b_V is added to every value row, so its gradient is the column sums "
    "of dV.",
    "stage.grad_x.title": "Backward: gradient of the input X",
    "stage.grad_x.why": "X reaches the loss through each projection that reads it and that the "
    "loss reaches, and the multivariate chain rule adds those paths, one term dP·W_Pᵀ each: the "
    "formula above has one for each (dV·W_Vᵀ only when the loss reads V). This is what flows on "
    "to the layer below.",
    "stage.grad_x.one.title": "Backward: gradient of the input X",
    "stage.grad_x.one.why": "In cross-attention X makes only the queries (the keys and values "
    "come from the source), so it reaches the loss by one path and the chain rule has nothing to "
    "add: dX = dQ·W_Qᵀ, the queries' gradient sent back through W_Q turned. This is what flows "
    "on to the layer below.",
    "note.grad_attend_no_v": "This loss reads only the weights, so the values and what makes or "
    "uses them do not reach it and get no gradient ({names}): the backward pass goes from dA to "
    "the scores, Q and K.",
    "stage.grad_source.title": "Backward: gradient of the source",
    "stage.grad_source.why": "The source makes K and V, and this loss reaches both: the "
    "multivariate chain rule adds the two paths, dsource = dK·W_Kᵀ + dV·W_Vᵀ (the queries' path "
    "goes to X).",
    "stage.grad_source.one.title": "Backward: gradient of the source",
    "stage.grad_source.one.why": "The source makes K and V, but this loss reads only the weights, "
    "so V does not reach it: the source's gradient comes back by the keys' path alone, "
    "dsource = dK·W_Kᵀ, with nothing for the chain rule to add (the queries' path goes to X).",
    "stage.grad_sinks.title": "Gradient of the sinks",
    "stage.grad_sinks.why": "A sink's logit took its share 1 − Σⱼ Aᵢⱼ of every row. Raising it "
    "moves weight from the keys to nothing, so its gradient is −Σᵢ (its share)·rᵢ, one number "
    "per head.",
    "note.grad_layout_torch": "In the layout W was given in (out × in, --layout torch): the "
    "product above, turned.",
    "note.grad_heads_side_by_side": "The {heads} heads' gradients side by side, as each head "
    "read its own columns of {weight}.",
    "note.grad_kv_shared": "{per} query heads share each key/value head, so the columns of "
    "{weight} they share receive the sum of their gradients.",
    "note.grad_paths": "{x} feeds {count} projections ({names}), and each reaches this loss: its "
    "gradient adds their {count} paths (the multivariate chain rule).",
    "note.grad_pe": "The position encoding is added to X and is not learned, so the gradient of "
    "X + PE is the gradient of X.",
    "note.loss_target": "The loss these numbers give: L = ½·Σ(O − T)² {eq} {loss}.",
    "note.loss_attend": "The loss these numbers give: L = −Σᵢ log A[i, tᵢ] {eq} {loss}, over "
    "{count} {count:target key|target keys}.",
    "note.loss_attend_head": "Head {head}'s part of the loss: −Σᵢ log A[i, tᵢ] {eq} {loss}, "
    "over {count} {count:target key|target keys} (the loss adds every head's part).",
    "note.loss_attend_one": "The loss these numbers give: L = −Σᵢ log A[i, tᵢ] {eq} {loss}, over "
    "one target key.",
    "note.loss_attend_head_one": "Head {head}'s part of the loss: −Σᵢ log A[i, tᵢ] {eq} {loss}, "
    "over one target key (the loss adds every head's part).",
    "note.grad_through_softmax": "√d_k, shown by its gradients: how much a logit can still move "
    "its own weight is ∂Aᵢⱼ/∂Sᵢⱼ = Aᵢⱼ·(1 − Aᵢⱼ), never more than 0.25. Its largest value in "
    "this head {eq_with} {with_}; with the scores not scaled ({root} left out) it would be "
    "{eq_without} {without}.",
    "note.grad_through_softmax_given": "The scale given, shown by its gradients: how much a logit "
    "can still move its own weight is ∂Aᵢⱼ/∂Sᵢⱼ = Aᵢⱼ·(1 − Aᵢⱼ), never more than 0.25. Its largest "
    "value in this head {eq_with} {with_}; with the scores not scaled ({root} left out) it would "
    "be {eq_without} {without}.",
    "note.grad_scores_smaller": "What reaches Q and K is the gradient of the scores Q·Kᵀ. Its "
    "size here (the root of the sum of its squares) {eq_with} {with_}; with the scores not scaled "
    "it would be {eq_without} {without}: smaller without the scaling.",
    "note.grad_scores_larger": "What reaches Q and K is the gradient of the scores Q·Kᵀ. Its size "
    "here (the root of the sum of its squares) {eq_with} {with_}; with the scores not scaled it "
    "would be {eq_without} {without}: larger without the scaling, not smaller.",
    "note.grad_saturated": "The unscaled softmax is saturated: its weights sit near 0 and 1, "
    "where its derivative A·(1 − A) is near 0, so little of dA gets through to Q and K (and to "
    "W_Q and W_K, which make them). Dividing by √d_k keeps the scores where the softmax still "
    "passes gradients.",
    "note.grad_saturated_given": "The unscaled softmax is saturated: its weights sit near 0 and "
    "1, where its derivative A·(1 − A) is near 0, so little of dA gets through to Q and K (given "
    "here; in a layer, to the W_Q and W_K that make them). Dividing by √d_k keeps the scores where "
    "the softmax still passes gradients.",
    "note.grad_scale_shrinks": "The unscaled softmax is not saturated here (its largest A·(1 − A) "
    "is at least a tenth of the scaled one's): the difference comes from the other weights the "
    "unscaled scores give, not from a blocked softmax.",
    "note.grad_log_cancels": "This loss, −Σ log A, cancels the softmax's vanishing derivative: in "
    "a row with a target, a logit's gradient is Aᵢⱼ − 1 at the target key and Aᵢⱼ elsewhere, "
    "which stays near 1 in size when the softmax is saturated on a wrong key. So here the scaling "
    "does not protect learning; it does where the loss reaches A through the output, as a real "
    "model's does (try --target).",
    "note.grad_not_saturated": "Here the scaling does not protect learning: the unscaled "
    "softmax is not saturated enough to block the gradient, and the scaled run's gradient is "
    "also multiplied by the scale on its way back. With a large d_k the unscaled softmax "
    "tends to saturate (try --preset dk64 with a --target).",
    "note.grad_scale_sharpens": "Here the scaling does not protect learning: a scale above 1 "
    "spreads the scores further apart, so the scaled softmax is the more saturated of the two (its "
    "largest A·(1 − A), above, is the smaller) and passes less back, even though the way back "
    "multiplies by the scale.",
    "note.grad_path_one": "{x} feeds one projection ({names}): its gradient comes back by that "
    "one path.",
    "note.grad_paths_some": "{x} feeds {count} projections ({names}), but only {reach} reach this "
    "loss: its gradient adds those {reached} paths (the multivariate chain rule).",
    "note.grad_path_one_of": "{x} feeds {count} projections ({names}), but only {reach} reaches "
    "this loss: its gradient comes back by that one path.",
    "note.grad_kv_heads_side_by_side": "The {heads} key/value heads' gradients side by side, each "
    "in the columns of {weight} that made that head.",
    "note.loss_target_rows": "T, the output to reach, row by row: {rows}.",
    "note.loss_target_rows_approx": "T, the output to reach, row by row (rounded to 4 decimals): "
    "{rows}.",
    "note.loss_attend_keys": "The key each query should look at (attend): {pairs}.",
    "help.usage": "Usage: ",
    "help.heading.options": "Options",
    "help.heading.arguments": "Arguments",
    "help.heading.commands": "Commands",
    "help.default": "[default: {value}]",
    "help.required": "[required]",
    "help.help_option": "Show this message and exit.",
    "help.train.compare_scale": "Train twice from the same start, with the problem's scale and "
    "with scale 1, and show both losses side by side: what √d_k does to learning, on this problem.",
    "train.progress": "Training",
    "train.progress_unscaled": "Training with scale 1",
    "train.compare_scale_mixer": "--compare-scale trains again with the scores not scaled, but "
    "a linear-attention layer forms no scores to rescale (no softmax; where it has 1/√d_k, it "
    "scales q̂): there is nothing to compare.",
    "train.compare_scale_one": "--compare-scale trains again with scale 1, but this problem's "
    "scale is already 1: there is nothing to compare.",
    "dataset.not_list": "{key} must be a list of examples (objects of the input format), and "
    "examples must hold at least one.",
    "dataset.too_many": "{key} holds {count} examples; at most {limit} are read.",
    "dataset.not_object": "{key}[{index}] must be an object of the input format (tokens, x, "
    "target or attend …).",
    "dataset.shared": "{key}[{index}] gives {field}: the weights are shared by every example, so "
    "they are given once, at the top level.",
    "dataset.in_example": "{key}[{index}]",
    "train.dataset": "A data set of {count} {count:example|examples} that share the weights: the "
    "loss L is the mean of theirs, and so is each gradient.",
    "train.dataset_heldout": "Held out, never trained on: {count} more (shown below with the "
    "weights before and after).",
    "train.attend_shortcut": "attend is a teaching shortcut: a real model is never told where to "
    "look. It learns its weights from its prediction error, which reaches the attention "
    "weights through the output (try --preset referent, a loss on the output).",
    "train.attend_heads": "With {heads} heads, attend pushes every head toward the same key for "
    "each query (the loss adds −log A over the heads); in a real model each head is free to find "
    "a pattern of its own.",
    "train.unmoved": "{names} did not move at all: their gradient was exactly 0 at every step.",
    "train.unmoved_one_key": "{names} did not move at all: each query has a single key it may "
    "see, so its weight is 1 whatever the scores (A ≡ 1), and the scores' gradient is exactly 0 "
    "at every step.",
    "train.diverging": "The loss rose at {rose} of the {done} {done:step|steps} and ended {ratio} "
    "times its start (×{last} at the last step). With a small enough η gradient descent never "
    "raises the loss, so η = {lr} is too large for this problem: try a smaller --lr.",
    "train.rose_back": "The loss rose at {rose} of the {done} {done:step|steps}: it came down to "
    "L {low} at step {step}, then ended at L {last}. A short enough step against the gradient "
    "always lowers the loss, so at those steps η = {lr} was too large: try a smaller --lr.",
    "train.rose_some": "The loss rose at {rose} of the {done} {done:step|steps} before it came "
    "down to L {last}: a short enough step against the gradient always lowers the loss, so at "
    "those steps η = {lr} was too large.",
    "train.log_scale": "(The bars are on a log scale: the loss spans at least {decades} "
    "{decades:decade|decades}.)",
    "train.scale_hint": "Before the softmax the scores are divided by √d_k = √{dk} {root}: for "
    "random vectors the spread of a dot product of d_k terms grows like √d_k, and the division "
    "keeps the scores' spread the same at any d_k. --compare-scale trains again from the same "
    "start with scale 1, to show what that does to learning on this problem.",
    "train.scale_hint_given": "Before the softmax the scores are multiplied by the problem's "
    "scale, {scale} (1/√d_k would be {default}). --compare-scale trains again from the same start "
    "with scale 1, to show what that scale does to learning on this problem.",
    "train.compare_title": "The loss with the scale and with scale 1",
    "train.col_unscaled": "L, scale 1",
    "train.spark_scaled": "scale {scale}:",
    "train.spark_unscaled": "scale 1:",
    "train.compare_lower": "From the same weights, L went from {first} to {last} with scale "
    "{scale}, and from {first_other} to {other} with scale 1: after {done} {done:step|steps} the "
    "scaled run's loss is lower{times}.",
    "train.compare_higher": "From the same weights, L went from {first} to {last} with scale "
    "{scale}, and from {first_other} to {other} with scale 1: after {done} {done:step|steps} the "
    "unscaled run's loss is lower{times}.",
    "train.compare_equal": "From the same weights, L went from {first} to {last} with scale "
    "{scale}, and from {first_other} to the same with scale 1.",
    "train.compare_times": ", by a factor of {ratio}",
    "train.heldout": "Held out, never trained on",
    "train.heldout_example": "Held-out example {index}: {tokens}",
    "train.heldout_loss": "Its loss with the weights before training and after: {before} → "
    "{after}.",
    "train.heldout_top": "'{query}' gives most of its weight to '{key}': {after} (before "
    "training: '{key_before}', {before}).",
    "train.heldout_top_head": "head {head}: '{query}' gives most of its weight to '{key}': "
    "{after} (before training: '{key_before}', {before}).",
    "train.example_title": "Example {index}: {tokens}",
    "train.examples_elided": "Examples not shown: {count}.",
    "preset.referent.description": "Training from examples, through the output: 'it' must find "
    "the animal among a sentence's words, learnt from five sentences and tried on a sixth it "
    "never saw",
    "preset.referent.reference": "Made for qkvcalc. One query, 'it' (X = [0, 0, 0, 0, 1]: the "
    "last column marks a pronoun), reads the words of a sentence (the source; columns: animal, "
    "then a 3-column identity code shared by one animal and one object: dog and ball, cat and "
    "box, bird and cup, then pronoun). The target T is the identity code of the sentence's "
    "animal, so the loss L = ½·Σ(O − T)² is on the output, as in a real model: nobody says where "
    "to look. Each sentence pairs its animal with an object of another code, so no W_V alone "
    "gives every T: only attending to the animal does. W_V starts as a copy of the code; W_Q and "
    "W_K start with 'it' giving the object a little more weight (54%). qkvcalc train --preset "
    "referent (20 steps, η = 0.5) trains on the five examples (the loss is their mean) and shows "
    "the held-out sentence 'box bird' before and after: 'it' gives 'bird' 46%, then 79%.",
    "preset.referent64.description": "The referent data set at d_k = 64, with random W_Q and W_K: "
    "--compare-scale shows what dividing by √64 does to learning through the output",
    "preset.referent64.reference": "Made for qkvcalc: the referent preset's sentences, X, W_V and "
    "loss (the identity code of the sentence's animal, on the output), with W_Q and W_K random "
    "and 64 columns wide: numpy.random.default_rng(4).standard_normal((5, 64)).round(2) for W_Q, "
    "then for W_K. Each score q·k then sums 64 products, so unscaled scores are eight times the "
    "scaled ones: with scale 1, four of the five examples start with a weight above 0.99 on one "
    "word (the other at 0.90), a saturated softmax that passes little gradient back from the "
    "output; divided by √64 = 8, every weight starts between 0.17 and 0.83. qkvcalc train "
    "--preset referent64 --compare-scale (20 steps, η = 0.5): the mean loss goes from ≈ 0.3085 to "
    "≈ 0.0108 with the scale, and from ≈ 0.4017 to ≈ 0.179 with scale 1; on the held-out "
    "sentence, 'it' gives 'bird' 10%, then 63%.",
    "train.dataset_loss_option": "{option} sets one problem's loss, but this is a data set whose "
    "examples carry their own: give each example its target or attend instead.",
    # ---- the norm over the joined heads, BitNet's attn_sub_norm (qkvcalc/ops/sub_norm.py) ----
    "ui.variant.sub_norm": "an RMSNorm over the joined heads before W_O (BitNet's attn_sub_norm), "
    "ε = {eps}",
    "stage.sub_rms.title": "Each row's root mean square over all the heads",
    "stage.sub_rms.why": "BitNet joins the heads' outputs side by side and normalizes each row "
    "with one RMSNorm over the whole width (attn_sub_norm, before o_proj): one root per token, "
    "shared by every head.",
    "stage.sub_normed.title": "The heads' outputs, normalized over the joined heads",
    "stage.sub_normed.why": "Each head's output divided by its row's root (shared by all the "
    "heads), times the head's columns of the norm's learned weight. The concat then joins these "
    "and W_O mixes them.",
    "stage.grad_sub_rms.title": "Backward: the gradient of each row's root",
    "stage.grad_sub_rms.why": "The root r was read by every head's normalized output, so its "
    "gradient adds every head's share (the chain rule's sum over the paths).",
    "stage.grad_sub_norm.title": "Backward: the gradient of the norm's weight",
    "stage.grad_sub_norm.why": "out_N = out / r ⊙ w: each weight multiplied one column of the "
    "normalized output in every row, so its gradient adds that column's d(out_N) times out / r "
    "over the tokens.",
    "note.sub_rms": "r = √(mean of the squares of the row's {width} {width:number|numbers} + ε), "
    "ε = {eps}: the heads' outputs side by side (BitNetRMSNorm over H·d_v).",
    "mistake.sub_norm_per_head": "This normalizes each head's output by its own root mean square "
    "(over d_v numbers): the norm takes one root per row over all the heads joined (H·d_v).",
    "sub_norm.eps_alone": "sub_norm_eps is given without sub_norm: the norm over the joined heads "
    "needs its weight (H·d_v numbers).",
    "sub_norm.length": "sub_norm has {length} {length:number|numbers}, but the norm over the "
    "joined heads needs H·d_v = {heads}×{d_v} = {width}: one weight per column of the heads "
    "side by side.",
    "sub_norm.eps": "sub_norm_eps must be a number greater than 0 (the ε under the root), not "
    "{value}.",
    "sub_norm.with_gate": "The norm over the joined heads (sub_norm) and the output gate (wg) "
    "are not computed together: leave out one of them.",
    "sub_norm.with_differential": "The norm over the joined heads (sub_norm) and differential "
    "attention are not computed together: leave out one of them.",
    "precision.sub_rms_eager": "As BitNetRMSNorm computes it: the heads' outputs side by side in "
    "float32, mean(x²) and √(mean + ε) in float32 (the norm multiplies by its reciprocal). Its "
    "numbers and units in the last place are float32's; the outputs were {dtype}'s.",
    "precision.sub_normed_eager": "As BitNetRMSNorm computes it: out times 1/r in float32, cast "
    "to {dtype}, then the weight (in {dtype}) times that, rounded to {dtype}.",
}
