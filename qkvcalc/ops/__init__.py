"""The operations of attention, one module each: what a stage computes and everything that
belongs to that computation (its forward and backward, its exact form, which cells a cell
reads, its cell arithmetic, its named mistakes, its PyTorch lines).

The core: `given` (the problem's own numbers), `projection` (X·W + b and every other product),
`transpose` (Kᵀ), `scale`, `mask`, `softmax` (its max, exp, sum and divide), `concat`, `add`,
`cache` (decoding with a KV cache), `tiles` (FlashAttention's online softmax), `grads` and
`flash_grads` (the backward pass's own operations). The features, each a plug-in that a problem
may or may not use (`features` lists them in pipeline order): `mla`, `qk_norm`, `rope`,
`temperature`, `score_bias` (ALiBi and a bias given), `softcap`, `window`, `sinks` …, each
imported when a problem uses it; `base` declares what a feature is, `hooks` what its hooks are
handed. `table` merges every module's operations into the one op table, `OPS`.
"""
