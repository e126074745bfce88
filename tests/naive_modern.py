"""An independent, plain reference of the WHOLE attention of the input format, modern keys
included: `attention(problem) -> (weights [H, n, m], output [n, d_out])`.

Written from DESIGN.md's contract alone ("Conventions of the math", "Modern attention",
"Input format"), sharing no code with qkvcalc: float64 numpy, one head at a time, loops where
a loop says it more plainly than a broadcast. It is the oracle of tests/test_extract.py and of
the engine's modern-attention stages.

What it follows, in order, per head:
  projections  Q = X·W_Q + b_Q (K, V from `source` when given; `layout: torch` = out×in;
               `q`/`k`/`v` given directly skip their projection; `positional` adds PE to X)
  heads        H query heads split W_Q's columns in order; G = kv_heads K/V heads split W_K,
               W_V; query head h (1-based) reads K/V head ceil(h·G/H)
  q/k norm     RMSNorm x / sqrt(mean(x²) + eps) · w (norm_eps, default 1e-6), or with
               qk_norm.kind "layer" LayerNorm (x − mean) / sqrt(var + eps) · w + b (b from
               qk_norm.bias.q / .k); weights one vector (d_k) or one row per head (H×d_k for
               q, G×d_k for k); qk_norm.over "projection": the whole projection row (H·d_k,
               G·d_k) normalised before the split into heads; qk_norm.after_rope: after RoPE
  rope         "half" pairs i with i + R/2, "pairs" pairs 2i with 2i+1; the first R = dims
               dimensions rotate; θ_i = theta^(−2i/R) or inv_freq; cos and sin times
               attention_factor; query i by positions[i], key j by key_positions[j]
  temperature  attn_temperature: query row i times τ_i (a list of n), or Llama 4's rule
               τ_i = log(1 + floor((positions[i] + 1) / floor_scale)) · attn_scale + 1;
               after the norm and the rotation
  scores       Q·Kᵀ · scale (default 1/sqrt(d_k))
  biases       ALiBi −slope_h·|pos_i − kpos_j| (true: the paper's slopes), score_bias n×m
               (all heads) or H×n×m, both added after scaling
  softcap      c·tanh(s/c), after scale and bias, before the mask
  mask         causal: kpos_j ≤ pos_i; window W: and pos_i − kpos_j < W; chunk_size C: and
               ⌊pos_i / C⌋ = ⌊kpos_j / C⌋; 0/1 matrix
               (1 = may attend); key_padding (1 = real key); masked = −∞
  softmax      stable; a row with every key masked gets weights 0 (and output 0); sinks: one
               more logit per head in each row's sum, dropped after it
  output       weights·V per head, heads concatenated in order, then ·W_O + b_O when given
  mla          (DeepSeek-V3's multi-head latent attention, in its own column order) in place
               of W_Q, W_K, W_V: q = RMSNorm(X·wq_a)·wq_b (or X·wq), each head's d_k columns
               [q_nope | q_pe] with q_pe its last rope_dims; [c_KV | k_pe] = X·wkv_a,
               [k_nope | v] of each head = RMSNorm(c_KV)·wkv_b; k = [k_nope | k_pe], the one
               k_pe for every head; RoPE turns q_pe and k_pe only
"""

from __future__ import annotations

import math
import re

import numpy as np

# ---- reading the input format ------------------------------------------------------------

_ALIASES = {
    "numheads": "heads",
    "nheads": "heads",
    "numkvheads": "kv_heads",
    "nkvheads": "kv_heads",
    "kvheads": "kv_heads",
    "sourcetokens": "source_tokens",
    "keypadding": "key_padding",
    "keypositions": "key_positions",
    "scorebias": "score_bias",
    "qnorm": "q_norm",
    "knorm": "k_norm",
    "normeps": "norm_eps",
    "vnorm": "v_norm",
    "chunksize": "chunk_size",
    "attentionchunksize": "chunk_size",
    "qknorm": "qk_norm",
    "attntemperature": "attn_temperature",
    "causalalign": "causal_align",
}


def _canonical(key: str) -> str:
    flat = re.sub(r"[\s_\-]", "", key.lower())
    return _ALIASES.get(flat, flat)


_TOKEN = re.compile(r"\s*(sqrt|\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|[-+*/()])")


def number(value) -> float:
    """A JSON number, or a string of the input format's number grammar: 3, -0.5, 1/2, -3e-2,
    sqrt(2), 1/sqrt(2) (a tiny recursive-descent reader: sums are not part of it)."""
    if isinstance(value, bool):
        return float(value)
    if not isinstance(value, str):
        return float(value)
    text = value.strip()
    if text.lower() in ("inf", "+inf", "-inf", "nan"):
        return float(text)
    tokens = _TOKEN.findall(text)
    if "".join(tokens) != re.sub(r"\s", "", text):
        raise ValueError(f"not a number: {value!r}")
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else None

    def take():
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def factor() -> float:
        tok = take()
        if tok in ("-", "+"):
            inner = factor()
            return -inner if tok == "-" else inner
        if tok == "sqrt":
            assert take() == "("
            inner = product()
            assert take() == ")"
            return math.sqrt(inner)
        if tok == "(":
            inner = product()
            assert take() == ")"
            return inner
        return float(tok)

    def product() -> float:
        acc = factor()
        while peek() in ("*", "/"):
            acc = acc * factor() if take() == "*" else acc / factor()
        return acc

    result = product()
    if pos != len(tokens):
        raise ValueError(f"not a number: {value!r}")
    return result


def _matrix(value) -> np.ndarray:
    arr = np.array(
        [[number(v) for v in row] for row in value]
        if isinstance(value, list) and value and isinstance(value[0], (list, tuple, np.ndarray))
        else (
            [[number(v) for v in value]]
            if isinstance(value, list)
            else np.asarray(value, dtype=np.float64)
        ),
        dtype=np.float64,
    )
    return arr.reshape(1, -1) if arr.ndim == 1 else arr


def _vector(value) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value.astype(np.float64).reshape(-1)
    return np.array([number(v) for v in value], dtype=np.float64)


# ---- the modern steps, one function each ------------------------------------------------


def alibi_slopes(heads: int) -> list[float]:
    """The ALiBi paper's slopes: for a power of two n, start = 2^(−8/n) and slope_i = start^i
    (i = 1…n); otherwise the slopes of the closest smaller power of two c, then every other slope
    of 2c's sequence for the remaining n − c heads."""

    def power_of_two(n: int) -> list[float]:
        start = 2.0 ** (-(2.0 ** -(math.log2(n) - 3)))
        return [start ** (i + 1) for i in range(n)]

    if math.log2(heads).is_integer():
        return power_of_two(heads)
    closest = 2 ** math.floor(math.log2(heads))
    return power_of_two(closest) + alibi_slopes(2 * closest)[0::2][: heads - closest]


def sinusoidal(positions: list[int], d_model: int) -> np.ndarray:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] = cos(same)."""
    pe = np.zeros((len(positions), d_model))
    for row, pos in enumerate(positions):
        for col in range(d_model):
            i = col // 2
            angle = pos / 10000.0 ** (2 * i / d_model)
            pe[row, col] = math.sin(angle) if col % 2 == 0 else math.cos(angle)
    return pe


def rms_norm(rows: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """Each row x becomes x / sqrt(mean(x²) + eps) · w."""
    out = np.empty_like(rows)
    for r, x in enumerate(rows):
        out[r] = x / math.sqrt(float(np.mean(x * x)) + eps) * weight
    return out


def layer_norm(rows: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """Each row x becomes (x − mean) / sqrt(var + eps) · w + b, var the mean of (x − mean)²."""
    out = np.empty_like(rows)
    for r, x in enumerate(rows):
        mean = sum(float(v) for v in x) / len(x)
        var = sum((float(v) - mean) ** 2 for v in x) / len(x)
        for c in range(len(x)):
            out[r, c] = (x[c] - mean) / math.sqrt(var + eps) * weight[c] + bias[c]
    return out


def rotate(rows: np.ndarray, positions: list[int], rope: dict, d_k: int) -> np.ndarray:
    """RoPE on each row (one token's q or k of one head) by its own position."""
    dims = int(rope.get("dims") or d_k)
    style = rope.get("style", "half")
    factor = number(rope.get("attention_factor", 1))
    if rope.get("inv_freq") is not None:
        inv_freq = _vector(rope["inv_freq"])
    else:
        theta = number(rope.get("theta", 10000))
        inv_freq = np.array([theta ** (-2.0 * i / dims) for i in range(dims // 2)])
    out = rows.copy()
    for r, pos in enumerate(positions):
        for i in range(dims // 2):
            angle = pos * inv_freq[i]
            cos, sin = math.cos(angle) * factor, math.sin(angle) * factor
            a, b = (i, i + dims // 2) if style == "half" else (2 * i, 2 * i + 1)
            x_a, x_b = rows[r, a], rows[r, b]
            out[r, a] = x_a * cos - x_b * sin
            out[r, b] = x_b * cos + x_a * sin
    return out


def latent_heads(mla: dict, x: np.ndarray, heads: int, torch_layout: bool):
    """Multi-head latent attention's per-head q, k, v (DeepSeek's order: the rotary part last)
    and the rotary width: lists of H matrices each."""

    def weight(name):
        w = _matrix(mla[name])
        return w.T if torch_layout else w

    eps = number(mla.get("eps", 1e-6))
    rope = int(mla["rope_dims"])
    if mla.get("wq") is not None:
        q_all = x @ weight("wq")
    else:
        q_all = rms_norm(x @ weight("wq_a"), _vector(mla["q_a_norm"]), eps) @ weight("wq_b")
    d_k = q_all.shape[1] // heads
    nope = d_k - rope
    kv_a = x @ weight("wkv_a")
    rank = kv_a.shape[1] - rope
    c_kv, k_pe = kv_a[:, :rank], kv_a[:, rank:]
    kv = rms_norm(c_kv, _vector(mla["kv_a_norm"]), eps) @ weight("wkv_b")
    width = kv.shape[1] // heads
    qs, ks, vs = [], [], []
    for h in range(heads):
        qs.append(q_all[:, h * d_k : (h + 1) * d_k])
        block = kv[:, h * width : (h + 1) * width]
        ks.append(np.concatenate([block[:, :nope], k_pe], axis=1))
        vs.append(block[:, nope:])
    return qs, ks, vs, rope


def softmax_rows(scores: np.ndarray, allowed: np.ndarray, sink: float | None = None) -> np.ndarray:
    """Stable softmax over the allowed keys of each row; a row with none allowed gets 0. A
    sink (gpt-oss) is one more logit in every row's sum, dropped after it."""
    weights = np.zeros_like(scores)
    for i in range(scores.shape[0]):
        live = [j for j in range(scores.shape[1]) if allowed[i, j]]
        if not live:
            continue
        top = max(scores[i, j] for j in live)
        if sink is not None:
            top = max(top, sink)
        exps = {j: math.exp(scores[i, j] - top) for j in live}
        total = sum(exps.values()) + (0.0 if sink is None else math.exp(sink - top))
        for j, e in exps.items():
            weights[i, j] = e / total
    return weights


# ---- the whole attention ----------------------------------------------------------------


def differential(diff: dict, weights: np.ndarray, values: list) -> list[np.ndarray]:
    """Differential attention (DiffLlama): pair i < H/2 is (Aᵢ − λ·A_{i+H/2})·[Vᵢ | V_{i+H/2}],
    each row over √(mean of its squares + ε), times 1 − λ_init (ε 1e-5 unless given)."""
    lam, init = number(diff["lambda"]), number(diff["lambda_init"])
    eps = number(diff.get("eps", 1e-5))
    half = len(values) // 2
    out = []
    for i in range(half):
        both = np.concatenate([values[i], values[i + half]], axis=1)
        rows = (weights[i] - lam * weights[i + half]) @ both
        rows = rows / np.sqrt(np.mean(rows * rows, axis=1, keepdims=True) + eps)
        out.append((1 - init) * rows)
    return out


def attention(problem: dict) -> tuple[np.ndarray, np.ndarray]:
    """Every head's attention weights [H, n, m] and the final output [n, d_out] of `problem`
    (a dict of the input format: lists, number strings or numpy arrays)."""
    doc = {_canonical(k): v for k, v in problem.items()}
    torch_layout = doc.get("layout") == "torch"

    def weight(name):
        if doc.get(name) is None:
            return None
        w = _matrix(doc[name])
        return w.T if torch_layout else w

    def bias(name):
        return None if doc.get(name) is None else _vector(doc[name])

    heads = int(doc.get("heads", 1))
    kv_heads = int(doc.get("kv_heads", heads))

    x = _matrix(doc["x"]) if doc.get("x") is not None else None
    source = _matrix(doc["source"]) if doc.get("source") is not None else None
    n = x.shape[0] if x is not None else _matrix(doc["q"]).shape[0]

    align = doc.get("causal_align", "top-left")
    m_rows = source.shape[0] if source is not None else None
    if m_rows is None:
        m_rows = _matrix(doc["k"]).shape[0] if doc.get("k") is not None else n
    if doc.get("positions") is not None:
        positions = [int(p) for p in doc["positions"]]
    elif align == "bottom-right":
        positions = list(range(m_rows - n, m_rows))
    else:
        positions = list(range(n))
    if doc.get("key_positions") is not None:
        key_positions = [int(p) for p in doc["key_positions"]]
    elif source is None and m_rows == n:
        key_positions = positions  # self-attention: keys sit where the queries do
    else:
        key_positions = list(range(m_rows))  # keys from a source (or a cache): 0…m−1

    pe = doc.get("positional")
    if pe is not None and x is not None:
        if isinstance(pe, str):
            assert pe == "sinusoidal", pe
            x = x + sinusoidal(positions, x.shape[1])
        else:
            x = x + _matrix(pe)
    src = source if source is not None else x

    def project(given, w, b, rows):
        if doc.get(given) is not None:
            return _matrix(doc[given])
        out = rows @ weight(w)
        return out if bias(b) is None else out + bias(b)

    latent = None
    if doc.get("mla") is not None:  # the latents stand in for W_Q, W_K, W_V
        latent = latent_heads(doc["mla"], x, heads, torch_layout)
        q_all = np.concatenate(latent[0], axis=1)
        k_all = np.concatenate(latent[1], axis=1)
        v_all = np.concatenate(latent[2], axis=1)
    else:
        q_all = project("q", "wq", "bq", x)
        k_all = project("k", "wk", "bk", src)
        v_all = project("v", "wv", "bv", src)
    m = k_all.shape[0]
    d_k = q_all.shape[1] // heads
    d_v = v_all.shape[1] // kv_heads
    assert k_all.shape[1] // kv_heads == d_k, "queries and keys need the same d_k"
    if doc.get("v_norm") not in (None, False):  # Gemma 3n, Gemma 4: each value row, no weight
        said = doc["v_norm"]
        v_eps = number(said.get("eps", 1e-6)) if isinstance(said, dict) else 1e-6
        parts = np.split(v_all, kv_heads, axis=1)
        v_all = np.concatenate([rms_norm(part, np.ones(d_v), v_eps) for part in parts], axis=1)
    scale = number(doc["scale"]) if doc.get("scale") is not None else 1 / math.sqrt(d_k)

    eps = number(doc.get("norm_eps", 1e-6))
    q_norm = None if doc.get("q_norm") is None else _matrix(doc["q_norm"])
    k_norm = None if doc.get("k_norm") is None else _matrix(doc["k_norm"])
    how = doc.get("qk_norm") or {}
    layer = how.get("kind", "rms") == "layer"
    given_bias = how.get("bias") or {}
    q_bias = None if given_bias.get("q") is None else _matrix(given_bias["q"])
    k_bias = None if given_bias.get("k") is None else _matrix(given_bias["k"])
    after_rope = bool(how.get("after_rope", False))

    def norm(rows, weights, biases, row):
        """Norm `rows` with row `row` (1-based) of the weights, or their only row."""
        w = weights[row - 1] if weights.shape[0] > 1 else weights[0]
        if not layer:
            return rms_norm(rows, w, eps)
        if biases is None:
            b = np.zeros(rows.shape[1])
        else:
            b = biases[row - 1] if biases.shape[0] > 1 else biases[0]
        return layer_norm(rows, w, b, eps)

    if how.get("over", "head") == "projection":  # OLMo 2: before the split into heads
        if q_norm is not None:
            q_all = norm(q_all, q_norm, q_bias, 1)
        if k_norm is not None:
            k_all = norm(k_all, k_norm, k_bias, 1)
        q_norm = k_norm = None
    rope = doc.get("rope")
    temperature = doc.get("attn_temperature")
    tau = None
    if isinstance(temperature, dict):
        tau = [
            math.log(1 + math.floor((pos + 1) / number(temperature["floor_scale"])))
            * number(temperature["attn_scale"])
            + 1
            for pos in positions
        ]
    elif temperature is not None:
        tau = [number(t) for t in temperature]

    alibi = doc.get("alibi")
    slopes = None
    if alibi is True:
        slopes = alibi_slopes(heads)
    elif isinstance(alibi, (list, tuple, np.ndarray)):
        slopes = [number(s) for s in alibi]
    score_bias = None
    if doc.get("score_bias") is not None:
        score_bias = np.asarray(doc["score_bias"], dtype=object)
        score_bias = np.array(
            np.vectorize(number, otypes=[float])(score_bias), dtype=np.float64
        ).reshape(score_bias.shape)
    softcap = None if doc.get("softcap") is None else number(doc["softcap"])
    sinks = None if doc.get("sinks") is None else _vector(doc["sinks"])

    mask = doc.get("mask", "none")
    window = doc.get("window")
    chunk = doc.get("chunk_size")
    padding = doc.get("key_padding")
    allowed = np.ones((n, m), dtype=bool)
    for i in range(n):
        for j in range(m):
            ok = True
            if isinstance(mask, str):
                if mask == "causal":
                    ok = key_positions[j] <= positions[i]
                else:
                    assert mask == "none", mask
            elif mask is not None:
                ok = bool(number(mask[i][j]))
            if window is not None:
                assert mask == "causal", "a window needs the causal mask"
                ok = ok and positions[i] - key_positions[j] < int(window)
            if chunk is not None:  # Llama 4: the key's chunk of C positions is the query's
                assert mask == "causal", "chunks need the causal mask"
                ok = ok and positions[i] // int(chunk) == key_positions[j] // int(chunk)
            if padding is not None:
                ok = ok and bool(number(padding[j]))
            allowed[i, j] = ok

    weights = np.zeros((heads, n, m))
    head_outputs, values = [], []
    for h in range(1, heads + 1):
        g = math.ceil(h * kv_heads / heads)
        q = q_all[:, (h - 1) * d_k : h * d_k]
        k = k_all[:, (g - 1) * d_k : g * d_k]
        v = v_all[:, (g - 1) * d_v : g * d_v]
        if q_norm is not None and not after_rope:
            q = norm(q, q_norm, q_bias, h)
        if k_norm is not None and not after_rope:
            k = norm(k, k_norm, k_bias, g)
        if rope is not None and latent is not None:  # only the last rope_dims turn
            tail = d_k - latent[3]
            turn = {**rope, "dims": latent[3]}
            q = np.concatenate([q[:, :tail], rotate(q[:, tail:], positions, turn, latent[3])], 1)
            k = np.concatenate(
                [k[:, :tail], rotate(k[:, tail:], key_positions, turn, latent[3])], 1
            )
        elif rope is not None:
            q = rotate(q, positions, rope, d_k)
            k = rotate(k, key_positions, rope, d_k)
        if q_norm is not None and after_rope:  # HunYuan: the norm after the rotation
            q = norm(q, q_norm, q_bias, h)
        if k_norm is not None and after_rope:
            k = norm(k, k_norm, k_bias, g)
        if tau is not None:
            q = q.copy()
            for i in range(n):
                q[i] = q[i] * tau[i]
        scores = np.einsum("id,jd->ij", q, k) * scale
        if slopes is not None:
            for i in range(n):
                for j in range(m):
                    scores[i, j] += -slopes[h - 1] * abs(positions[i] - key_positions[j])
        if score_bias is not None:
            scores = scores + (score_bias[h - 1] if score_bias.ndim == 3 else score_bias)
        if softcap is not None:
            scores = softcap * np.tanh(scores / softcap)
        sink = None if sinks is None else sinks[h - 1]
        weights[h - 1] = softmax_rows(scores, allowed, sink)
        values.append(v)
        head_outputs.append(weights[h - 1] @ v)
    if doc.get("differential") is not None:  # DiffLlama: the heads in pairs
        head_outputs = differential(doc["differential"], weights, values)

    concat = np.concatenate(head_outputs, axis=1)
    wo = weight("wo")
    if wo is None:
        return weights, concat
    output = concat @ wo
    if bias("bo") is not None:
        output = output + bias("bo")
    return weights, output
