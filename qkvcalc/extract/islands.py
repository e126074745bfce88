"""transformers keeps some steps in float32 even in a float64 model: the softmax (softmax(...,
dtype=torch.float32)), RMSNorm and T5's, Cohere's and OLMo's layer norms (x.to(torch.float32)),
x.float() (Mixtral's router, Cohere's rotation, Llama 4's positions for its temperature) and
x.type(torch.float32) (DeepSeek-V3's and GLM-4.5's routers), AFMoE's router (logits cast to
float32), DiffLlama's λ (torch.sum(..., dtype=torch.float32)), the rotary tables (inv_freq built
in float32, angles in float32), BLOOM's ALiBi slopes, Gemma's embedding scale √d_model and
XGLM's and CTRL's sinusoidal position tables (float32 buffers in a model built in float32 and
converted).
With those, x at layer L is off by ~2e-7 relative. `float64_islands(model)` lifts them for one
run: the softmax (functional's and the Tensor's method, DeepSeek-V4's compressors'), Tensor.float
and Tensor.type keep a float64 input float64 (Tensor.float makes whole numbers float64 too),
DiffLlama's torch.sum keeps float64, MiniMax's lightning decays are
computed in float64, the norms, rotary embeddings and AFMoE's routers of this model compute in
float64 (their instance's forward replaced), Gated DeltaNet's casts to float32 keep float64
while its forward runs (Qwen3-Next's and Qwen3.5's linear layers), BLOOM's slopes and XGLM's
and CTRL's position tables are float64 (and the default dtype while an XGLM runs: its eager
attention makes the dtype's minimum with torch.full), GPT-Neo's, GPT-J's and CodeGen's scores
are not cast to float32 (their sinusoid table is float64 too, in the attention module up to
transformers 5.24 and in the rotary module since 5.25), and GPT-2's
reorder_and_upcast_attn path (float32 by design) is switched to the ordinary one, which is the
same math. Everything is restored when the block ends, also on an error.

The rotary tables are rebuilt in float64 from the config's rope parameters for each rope type
(scaled ones too: linear, dynamic NTK, YaRN, longrope, llama3), for this run's length and per
layer type (rope.py); the problem carries the same frequencies as inv_freq, so qkvcalc and the
run agree.
"""

from __future__ import annotations

import contextlib
import math
import types
from collections.abc import Iterator
from typing import Any


def class_name(module: Any) -> str:
    """The module's class as transformers names it: a module whose weights read as float64
    in a streamed run (stream.py, a parametrization) is of a class torch names
    Parametrized<name>."""
    return type(module).__name__.removeprefix("Parametrized")


_STANDARD_RMS = (
    "LlamaRMSNorm",
    "BitNetRMSNorm",  # its input_layernorm, attn_sub_norm (sub_norm) and MLP's ffn_sub_norm
    "MistralRMSNorm",
    "Qwen2RMSNorm",
    "Qwen3RMSNorm",
    "T5LayerNorm",
    "Phi3RMSNorm",
    "MixtralRMSNorm",
    "Qwen2MoeRMSNorm",
    "SmolLM3RMSNorm",
    "Exaone4RMSNorm",
    "GptOssRMSNorm",
    "Olmo2RMSNorm",
    "HunYuanDenseV1RMSNorm",
    "DeepseekV3RMSNorm",
    "DeepseekV2RMSNorm",
    "DeepseekV4RMSNorm",  # its weight multiplied in float32 too: lifted, the same math
    "MiniCPM3RMSNorm",
    "Glm4MoeLiteRMSNorm",
    "YoutuRMSNorm",
    "AXK1RMSNorm",
    "Olmo3RMSNorm",
    "ApertusRMSNorm",
    "SeedOssRMSNorm",
    "Glm4RMSNorm",
    "Glm4MoeRMSNorm",
    "Qwen3MoeRMSNorm",
    "Ernie4_5RMSNorm",
    "Ernie4_5_MoeRMSNorm",
    "GraniteRMSNorm",
    "GraniteMoeRMSNorm",
    "GraniteMoeSharedRMSNorm",
    "GraniteSWARMSNorm",
    "GraniteMoeSWARMSNorm",
    "OlmoeRMSNorm",
    "FlexOlmoRMSNorm",
    "GlmRMSNorm",
    "HeliumRMSNorm",
    "ArceeRMSNorm",
    "MinistralRMSNorm",
    "CwmRMSNorm",
    "HyperCLOVAXRMSNorm",
    "SolarOpenRMSNorm",
    "ExaoneMoeRMSNorm",
    "HunYuanMoEV1RMSNorm",
    "MiniMaxM2RMSNorm",
    "MellumRMSNorm",
    "Kolibri1RMSNorm",
    "DiffLlamaRMSNorm",
    "HYV3RMSNorm",
    "Cohere2MoeRMSNorm",
    "Ministral3RMSNorm",
    "AfmoeRMSNorm",
    "FlintRMSNorm",
    "BambaRMSNorm",
    "JambaRMSNorm",
    "GraniteMoeHybridRMSNorm",
    "Lfm2RMSNorm",
    "Lfm2MoeRMSNorm",
    "NemotronHRMSNorm",
    "FalconH1RMSNorm",
    "OlmoHybridRMSNorm",
    "KimiLinearRMSNorm",
    "DeepseekV32RMSNorm",
    "GlmMoeDsaRMSNorm",
    "ZambaRMSNorm",
    "Zamba2RMSNorm",
    "MiniMaxRMSNorm",
    "Dots1RMSNorm",
    "MiMoV2FlashRMSNorm",
    "BeamRMSNorm",
    "Lfm3RMSNorm",
    "BailingHybridRMSNorm",
    "DogeRMSNorm",
    "AriaTextRMSNorm",
    "LagunaRMSNorm",
)
# x·rsqrt(mean(x²) + eps)·(1 + w)
_GEMMA_RMS = ("GemmaRMSNorm", "Gemma2RMSNorm", "Gemma3RMSNorm", "VaultGemmaRMSNorm")
_MEAN_CENTRED = (
    "CohereLayerNorm",
    "Cohere2LayerNorm",
    "Cohere2MoeLayerNorm",
    "CohereCompassLayerNorm",
)  # LayerNorm without bias, computed in float32


def _rms(module: Any, hidden: Any) -> Any:
    eps = getattr(module, "variance_epsilon", getattr(module, "eps", 1e-6))
    kind = class_name(module)
    if kind in _MEAN_CENTRED:
        hidden = hidden - hidden.mean(-1, keepdim=True)
    normed = hidden * (hidden.pow(2).mean(-1, keepdim=True) + eps).rsqrt()
    if kind in _GEMMA_RMS:
        return normed * (1.0 + module.weight)
    return module.weight * normed


def _plain_layer_norm(module: Any, hidden: Any) -> Any:
    """OLMo's LayerNorm without weight or bias (eps 1e-5), without its cast to float32."""
    import torch.nn.functional as functional

    return functional.layer_norm(hidden, module.normalized_shape, None, None, eps=1e-5)


def _afmoe_router(module: Any, hidden_states: Any, expert_bias: Any) -> Any:
    """AfmoeTokenChoiceRouter.forward without its cast of the logits to float32: the same steps."""
    import torch

    hidden_states = hidden_states.view(-1, hidden_states.shape[-1])
    router_logits = module.gate(hidden_states)
    scores = torch.sigmoid(router_logits)
    _, selected_experts = torch.topk(scores + expert_bias, k=module.top_k, dim=1)
    top_scores = scores.gather(dim=1, index=selected_experts)
    top_scores = top_scores / (top_scores.sum(dim=-1, keepdim=True) + 1e-20)
    return router_logits, top_scores * module.route_scale, selected_experts


def _rotary_float64(module: Any, x: Any, position_ids: Any, layer_type: Any = None) -> Any:
    """A rotary embedding's forward in float64: the frequencies of rope.frequencies for this
    run's length (the dynamic update included), laid out as the module lays them out (M-RoPE's
    positions, one row per axis, read as one when every axis holds the text position). Its own
    forward runs first (float32, and it updates the dynamic buffers as transformers does); the
    float64 table replaces it once its layout (cat, interleaved, or one copy) is recognised by
    the numbers; a table this module cannot recognise is left as the module made it."""
    import torch

    from qkvcalc.extract.rope import buffer, frequencies, scaling

    extra = {} if layer_type is None else {"layer_type": layer_type}
    table = type(module).forward(module, x, position_ids, **extra)
    found = frequencies(module, layer_type, int(position_ids.max()) + 1)
    if found is None:
        inv_freq, factor = buffer(module, layer_type).to(torch.float64), scaling(module, layer_type)
    else:
        inv_freq, factor = torch.from_numpy(found[0]), found[1]
    if position_ids.dim() == 3 and bool((position_ids == position_ids[:1]).all()):
        position_ids = position_ids[0]  # M-RoPE's axes (Cohere Compass) all text positions
    angles = position_ids[..., None].to(torch.float64) * inv_freq.to(x.device)
    if torch.is_tensor(table) and table.is_complex():  # Llama 4: e^(iφ) itself, [.., d/2]
        return torch.polar(torch.ones_like(angles), angles) * factor
    cos32, sin32 = table
    for emb in (
        torch.cat((angles, angles), dim=-1),
        torch.repeat_interleave(angles, 2, dim=-1),
        angles,
    ):
        if emb.shape == cos32.shape and torch.allclose(
            emb.cos() * factor, cos32.to(torch.float64), atol=1e-3
        ):
            return (emb.cos() * factor).to(x.dtype), (emb.sin() * factor).to(x.dtype)
    return cos32, sin32


# A hybrid's layers that are not attention, by the end of their class's name: Gated DeltaNet,
# the Mamba mixers (Granite 4's: GraniteMoeHybridMambaLayer), Kimi Delta Attention (Kimi
# Linear's, Ling 3.0's BailingHybridDeltaAttention)
OTHER_LAYERS = (
    "GatedDeltaNet",
    "Mixer",
    "MambaLayer",
    "LinearDeltaAttention",
    "HybridDeltaAttention",
)
# Attention modules that cast a step to float32 by `.to(torch.float32)`: Granite SWA's sink
# scale σ(logsumexp(scores) − s)
CAST_INSIDE = ("GraniteSWAAttention", "GraniteMoeSWAAttention")


def _float64_inside(module: Any) -> Any:
    """The module's forward with Tensor.to(torch.float32) of a float64 tensor keeping it float64
    while it runs: Gated DeltaNet (Qwen3-Next, Qwen3.5) casts q, k, v, β and the decay to
    float32, and its gated RMSNorm its input and gate, by `.to(torch.float32)`."""
    import torch

    own = type(module).forward

    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        to = torch.Tensor.to

        def keep(tensor: Any, *a: Any, **k: Any) -> Any:
            if tensor.dtype == torch.float64:
                a = tuple(torch.float64 if x is torch.float32 else x for x in a)
                if k.get("dtype") is torch.float32:
                    k["dtype"] = torch.float64
            return to(tensor, *a, **k)

        torch.Tensor.to = keep  # type: ignore[method-assign,assignment]
        try:
            return own(self, *args, **kwargs)
        finally:
            torch.Tensor.to = to  # type: ignore[method-assign]

    return types.MethodType(forward, module)


def lightning_slopes(heads: int, layer: int, layers: int) -> Any:
    """MiniMaxLightningAttention.get_slope_rate in float64 (a numpy array [H]): the decay rate
    λ_h = (2^(−8/H))^(h+1)·(1 − L/(N − 1 + 10⁻⁵) + 10⁻⁵) of head h in layer L of N."""
    import numpy as np

    base = 1 / (2 ** (8 / heads))
    factor = 1 - layer / (layers - 1 + 1e-5) + 1e-5
    return np.array([base ** (h + 1) * factor for h in range(heads)])


LIGHTNING_BUFFERS = ("slope_rate", "query_decay", "key_decay", "diagonal_decay")


def _lightning_float64(module: Any, restore: list[Any]) -> None:
    """MiniMax's lightning layer: its decay rates and the decays made from them, buffers
    computed in float32 (and saved so in a checkpoint), computed again in float64."""
    import torch

    kept = {name: getattr(module, name) for name in LIGHTNING_BUFFERS}
    found = lightning_slopes(module.num_attention_heads, module.layer_idx, module.num_hidden_layers)
    slope = torch.tensor(found, dtype=torch.float64, device=kept["slope_rate"].device)
    slope = slope[:, None, None]
    made = (slope, *module.decay_factors(slope))
    for name, value in zip(LIGHTNING_BUFFERS, made, strict=True):
        setattr(module, name, value)
        restore.append(lambda m=module, k=name, v=kept[name]: setattr(m, k, v))


def _neo_attn(module: Any, query: Any, key: Any, value: Any, attention_mask: Any = None) -> Any:
    """GPTNeoSelfAttention._attn without its casts of q and k to float32: the same steps."""
    import torch

    weights = torch.matmul(query, key.transpose(-1, -2))
    q_len, k_len = query.size(-2), key.size(-2)
    causal = module.bias[:, :, k_len - q_len : k_len, :k_len]
    lowest = torch.tensor(
        torch.finfo(weights.dtype).min, dtype=weights.dtype, device=weights.device
    )
    weights = torch.where(causal, weights, lowest)
    if attention_mask is not None:
        weights = weights + attention_mask
    weights = module.attn_dropout(torch.nn.functional.softmax(weights, dim=-1).to(value.dtype))
    return torch.matmul(weights, value), weights


def _gptj_attn(module: Any, query: Any, key: Any, value: Any, attention_mask: Any = None) -> Any:
    """GPTJAttention._attn without its casts of q and k to float32: the same steps."""
    import torch

    weights = torch.matmul(query, key.transpose(-1, -2)) / module.scale_attn
    if attention_mask is not None:
        weights = weights + attention_mask
    weights = module.attn_dropout(torch.nn.functional.softmax(weights, dim=-1).to(value.dtype))
    return torch.matmul(weights, value), weights


def _codegen_attn(module: Any, query: Any, key: Any, value: Any, attention_mask: Any = None) -> Any:
    """CodeGenAttention._attn (transformers 5.23–5.24) without its casts of q and k to float32:
    the same steps (the mask added before the division by √d_k)."""
    import torch

    weights = torch.matmul(query, key.transpose(-1, -2))
    if attention_mask is not None:
        weights = weights + attention_mask
    weights = torch.nn.functional.softmax(weights / module.scale_attn, dim=-1).to(value.dtype)
    return torch.matmul(module.attn_dropout(weights), value), weights


def _gptj_eager(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    scaling: float,
    dropout: float = 0.0,
    **kwargs: Any,
) -> Any:
    """transformers 5.25's GPT-J eager_attention_forward without its casts of q and k to
    float32: the same steps."""
    import torch

    weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        weights = weights + attention_mask
    weights = torch.nn.functional.softmax(weights, dim=-1).to(value.dtype)
    weights = torch.nn.functional.dropout(weights, p=dropout, training=module.training)
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights


def _sinusoidal_positions(rows: int, dims: int, like: Any) -> Any:
    """GPT-J's table of [sin | cos] of position × 10000^(−2i/dims), in float64."""
    import torch

    inv_freq = 1.0 / (10000 ** (torch.arange(0, dims, 2, dtype=torch.float64) / dims))
    angles = torch.arange(rows, dtype=torch.float64)[:, None] * inv_freq
    return torch.cat((torch.sin(angles), torch.cos(angles)), dim=1).to(like.device)


def _xglm_positions(module: Any, table: Any) -> Any:
    """XGLM's sinusoidal position table (get_embedding: [sin | cos] of position ×
    e^(−i·ln 10000/(d/2 − 1)), zero at padding_idx), in float64, as many rows as `table`."""
    import torch

    rows, dims = table.shape
    half = module.embedding_dim // 2
    step = math.log(10000) / (half - 1)
    freqs = torch.exp(torch.arange(half, dtype=torch.float64) * -step)
    angles = torch.arange(rows, dtype=torch.float64)[:, None] * freqs[None, :]
    out = torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)
    if dims > out.shape[1]:  # an odd width: a column of zeros
        out = torch.cat([out, torch.zeros(rows, 1, dtype=torch.float64)], dim=1)
    if module.padding_idx is not None:
        out[module.padding_idx, :] = 0
    return out.to(table.device)


def _alibi_slopes(num_heads: int, device: Any) -> Any:
    """BLOOM's _get_alibi_slopes (the ALiBi paper's recipe), in float64."""
    import torch

    closest = 2 ** math.floor(math.log2(num_heads))
    base = 2 ** (-(2 ** -(math.log2(closest) - 3)))
    slopes = [base**power for power in range(1, 1 + closest)]
    if closest != num_heads:
        extra = 2 ** (-(2 ** -(math.log2(2 * closest) - 3)))
        remaining = min(closest, num_heads - closest)
        slopes += [extra**power for power in range(1, 1 + 2 * remaining, 2)]
    return torch.tensor(slopes, dtype=torch.float64, device=device)


def _patch_modules(model: Any, restore: list[Any]) -> None:
    """The model's own modules that compute in float32 (norms, rotary tables, GPT-Neo's and
    GPT-J's scores, AFMoE's routers …) made to keep float64; each undo added to `restore`."""
    import torch

    for module in model.modules():
        kind = class_name(module)
        if kind in _STANDARD_RMS + _GEMMA_RMS + _MEAN_CENTRED:
            module.forward = types.MethodType(_rms, module)
        elif kind == "MiniMaxLightningAttention":
            _lightning_float64(module, restore)
            continue
        elif kind == "OlmoLayerNorm":
            module.forward = types.MethodType(_plain_layer_norm, module)
        elif kind == "AfmoeTokenChoiceRouter":
            module.forward = types.MethodType(_afmoe_router, module)
        elif kind.endswith(OTHER_LAYERS) or kind in CAST_INSIDE:  # a hybrid's other layers
            module.forward = _float64_inside(module)
        elif kind.endswith("RotaryEmbedding") and hasattr(module, "rope_type"):
            module.forward = types.MethodType(_rotary_float64, module)
        elif hasattr(module, "scalar_embed_scale") and hasattr(module, "embed_scale"):
            # Gemma's √d_model, a buffer made with torch.tensor(float): float32 in a model
            # built in float32 and converted after
            scale = module.embed_scale
            module.embed_scale = torch.tensor(
                float(module.scalar_embed_scale), dtype=torch.float64, device=scale.device
            )
            restore.append(lambda m=module, s=scale: setattr(m, "embed_scale", s))
            continue
        elif kind == "XGLMSinusoidalPositionalEmbedding" and module.weights.dtype == torch.float64:
            table = module.weights  # built in float32 at construction, then converted
            module.weights = _xglm_positions(module, table)
            restore.append(lambda m=module, t=table: setattr(m, "weights", t))
            continue
        elif kind == "CTRLModel":  # its sinusoidal table, made with torch.float at construction
            from transformers.models.ctrl.modeling_ctrl import positional_encoding

            table = module.pos_encoding
            module.pos_encoding = positional_encoding(
                table.shape[0], module.d_model_size, torch.float64
            ).to(table.device)
            restore.append(lambda m=module, t=table: setattr(m, "pos_encoding", t))
            continue
        elif kind == "GPTNeoSelfAttention":
            module._attn = types.MethodType(_neo_attn, module)
            restore.append(lambda m=module: delattr(m, "_attn"))
            continue
        elif kind in ("GPTJRotaryEmbedding", "CodeGenRotaryEmbedding"):  # 5.25: the table here
            table = module.embed_positions
            module.embed_positions = _sinusoidal_positions(
                table.shape[0], module.pos_embd_dim, table
            )
            restore.append(lambda m=module, t=table: setattr(m, "embed_positions", t))
            continue
        elif kind in ("GPTJAttention", "CodeGenAttention") and not hasattr(module, "_attn"):
            continue  # 5.25: its scores are the module-level eager function's (below)
        elif kind in ("GPTJAttention", "CodeGenAttention"):
            table = module.embed_positions
            module.embed_positions = _sinusoidal_positions(
                table.shape[0], module.pos_embd_dim, table
            )
            own = _gptj_attn if kind == "GPTJAttention" else _codegen_attn
            module._attn = types.MethodType(own, module)
            restore.append(lambda m=module: delattr(m, "_attn"))
            restore.append(lambda m=module, t=table: setattr(m, "embed_positions", t))
            continue
        elif kind == "GPT2Attention" and module.reorder_and_upcast_attn:
            module.reorder_and_upcast_attn = False
            restore.append(lambda m=module: setattr(m, "reorder_and_upcast_attn", True))
            continue
        else:
            continue
        restore.append(lambda m=module: delattr(m, "forward"))


def _lift_eager(model: Any, restore: list[Any]) -> None:
    """GPT-J's and CodeGen's module-level eager_attention_forward (transformers 5.25: q and k
    cast to float32 there) replaced by _gptj_eager, the same steps without the casts."""
    import importlib

    for name in ("gptj", "codegen"):
        if type(model).__module__.startswith(f"transformers.models.{name}"):
            modeling = importlib.import_module(f"transformers.models.{name}.modeling_{name}")
            eager = getattr(modeling, "eager_attention_forward", None)
            if eager is not None:
                setattr(modeling, "eager_attention_forward", _gptj_eager)  # noqa: B010
                restore.append(lambda m=modeling, e=eager: setattr(m, "eager_attention_forward", e))


def _lift_sum(restore: list[Any]) -> None:
    """DiffLlama's λ: torch.sum(λ_q·λ_k, dtype=torch.float32) keeps a float64 input float64."""
    import torch

    total = torch.sum

    def float64_sum(input: Any, *args: Any, dtype: Any = None, **kwargs: Any) -> Any:
        if dtype == torch.float32 and input.dtype == torch.float64:
            dtype = None
        return total(input, *args, dtype=dtype, **kwargs)

    torch.sum = float64_sum
    restore.append(lambda: setattr(torch, "sum", total))


@contextlib.contextmanager
def float64_islands(model: Any) -> Iterator[None]:
    import torch
    import torch.nn.functional as functional

    restore: list[Any] = []
    softmax = functional.softmax

    def float64_softmax(input: Any, dim: Any = None, _stacklevel: int = 3, dtype: Any = None):
        if dtype == torch.float32 and input.dtype == torch.float64:
            dtype = None
        return softmax(input, dim=dim, _stacklevel=_stacklevel, dtype=dtype)

    tensor_softmax = torch.Tensor.softmax  # DeepSeek-V4's compressors: x.softmax(dim, float32)

    def float64_tensor_softmax(tensor: Any, dim: Any = None, dtype: Any = None) -> Any:
        if dtype == torch.float32 and tensor.dtype == torch.float64:
            dtype = None
        return tensor_softmax(tensor, dim, dtype=dtype)

    try:
        functional.softmax = float64_softmax
        restore.append(lambda: setattr(functional, "softmax", softmax))
        torch.Tensor.softmax = float64_tensor_softmax  # type: ignore[method-assign,assignment]
        restore.append(lambda: setattr(torch.Tensor, "softmax", tensor_softmax))
        to_float = torch.Tensor.float  # Mixtral's router, Cohere's rotation: x.float()

        def keep_float64(tensor: Any, *args: Any, **kwargs: Any) -> Any:
            if tensor.dtype == torch.float64:
                return tensor
            if not tensor.is_floating_point() and not tensor.is_complex():
                # whole numbers become float64 (Llama 4's attention temperature takes the log
                # of positions.float())
                return tensor.to(torch.float64)
            return to_float(tensor, *args, **kwargs)

        torch.Tensor.float = keep_float64  # type: ignore[method-assign,assignment]
        restore.append(lambda: setattr(torch.Tensor, "float", to_float))
        to_type = torch.Tensor.type  # DeepSeek-V3's and GLM-4.5's routers: x.type(torch.float32)

        def type_float64(tensor: Any, dtype: Any = None, *args: Any, **kwargs: Any) -> Any:
            if dtype == torch.float32 and tensor.dtype == torch.float64:
                return tensor
            return to_type(tensor, dtype, *args, **kwargs)

        torch.Tensor.type = type_float64  # type: ignore[method-assign,assignment]
        restore.append(lambda: setattr(torch.Tensor, "type", to_type))
        _patch_modules(model, restore)
        _lift_eager(model, restore)
        if type(model).__module__.startswith("transformers.models.diffllama"):
            _lift_sum(restore)
        if type(model).__module__.startswith("transformers.models.xglm"):
            # its eager attention clamps the scores to torch.full((), finfo(float64).min),
            # made in the default dtype: float64 while the run lasts
            default = torch.get_default_dtype()
            torch.set_default_dtype(torch.float64)
            restore.append(lambda: torch.set_default_dtype(default))
        if type(model).__module__.startswith("transformers.models.bloom"):
            from transformers.models.bloom import modeling_bloom

            slopes = modeling_bloom._get_alibi_slopes
            modeling_bloom._get_alibi_slopes = _alibi_slopes
            restore.append(lambda: setattr(modeling_bloom, "_get_alibi_slopes", slopes))
        yield
    finally:  # every patch is undone, even when one undo fails (the first failure then rises)
        failed: BaseException | None = None
        for undo in reversed(restore):
            try:
                undo()
            except BaseException as err:
                failed = failed or err
        if failed is not None:
            raise failed
