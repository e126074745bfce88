"""A real linear-attention (or sparse-attention) layer in bfloat16, end to end: a tiny model of
each family (from its config, random weights, eager) cast to bfloat16 and saved;
`qkvcalc.extract(..., dtype="bfloat16")` then `qkvcalc.explain(..., dtype="bfloat16")` against
the layer module's own output in that run of the model. The module computes a prompt with its
chunked (blocked) kernel; qkvcalc's output reads the recurrent states: Qwen3-Next's and Kimi
Linear's keep them in float32, so the two agree to the bit (every cell); MiniMax keeps its state
in bfloat16, so its blocked prompt path and the recurrent one round apart: they are no farther
from each other than about the float64 twin is from the module (measured: 0.0059 against
0.0051, outputs up to 0.70). DeepSeek-V3.2's and GLM-MoE-DSA's sparse attention: the indexer's
keys and o_proj's output, bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qkvcalc
from tests.test_extract import build_from
from tests.test_extract_hybrid import EAGER, LINEAR, MOE, as_loaded
from tests.test_extract_more import LLAMA, at, ids
from tests.test_precision_torch import _ulps

torch = pytest.importorskip("torch", reason="the layers are transformers' own")


def _kimi() -> Any:
    from tests.test_extract_kda import CASES

    return build_from("KimiLinearConfig", CASES["kimi_linear"][0], "KimiLinearForCausalLM", **EAGER)


def _qwen3_next() -> Any:
    model = build_from(
        "Qwen3NextConfig", {**LLAMA, **LINEAR, **MOE}, "Qwen3NextForCausalLM", **EAGER
    )
    as_loaded(model, "qwen3_next")
    return model


def _minimax() -> Any:
    from tests.test_extract_minimax import FIELDS, as_saved

    model = build_from("MiniMaxConfig", FIELDS, "MiniMaxForCausalLM", **EAGER)
    as_saved(model)
    return model


CASES = {  # the model, where its linear layer is, which layer
    "qwen3_next": (_qwen3_next, "model.layers.{}.linear_attn", 0),
    "kimi_linear": (_kimi, "model.layers.{}.self_attn", 0),
    "minimax": (_minimax, "model.layers.{}.self_attn", 0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_real_layer_in_bfloat16_is_reproduced(name: str, tmp_path) -> None:
    make, path, layer = CASES[name]
    model = make().to(torch.bfloat16)
    folder = tmp_path / name
    model.save_pretrained(folder)
    problem = qkvcalc.extract(str(folder), layer=layer, input_ids=ids(), dtype="bfloat16")
    seen: dict = {}

    def hook(module: Any, args: Any, kwargs: Any, out: Any) -> None:
        x = args[0] if args else kwargs["hidden_states"]
        seen.update(x=x[0], out=(out[0] if isinstance(out, tuple) else out)[0])

    handle = at(model, path, layer).register_forward_hook(hook, with_kwargs=True)
    try:
        with torch.no_grad():
            model(input_ids=torch.tensor([ids()]))
    finally:
        handle.remove()
    assert np.array_equal(np.asarray(problem["x"], dtype=float), seen["x"].double().numpy())
    trace = qkvcalc.explain(**problem, dtype="bfloat16")
    ulps = _ulps(trace.output, seen["out"].double().numpy(), torch.bfloat16)
    if name == "minimax":  # the two forms' bfloat16 states differ: near, not the same bits
        gap = np.abs(trace.output - seen["out"].double().numpy()).max()
        twin = np.abs(trace.stage("output").twin_value - seen["out"].double().numpy()).max()
        assert gap <= 2 * twin, (gap, twin)
    else:  # bit for bit where it was first measured; on another machine, whose BLAS and
        # torch kernels sum float32 products in another order (or fused), a cell may be one unit
        # in the last place away (a tiny Qwen3-Next there: 1 cell of 192)
        assert ulps.max() <= 1 and (ulps == 0).mean() >= 0.99, ((ulps == 0).mean(), ulps.max())


@pytest.mark.parametrize("layer", [0, 1])
@pytest.mark.parametrize("name", ["deepseek_v32", "glm_moe_dsa"])
def test_a_real_sparse_attention_layer_in_bfloat16_is_reproduced(
    name: str, layer: int, tmp_path
) -> None:
    """DeepSeek-V3.2's and GLM-MoE-DSA's attention with its indexer, in bfloat16: the keys the
    model's own indexer returns are the dtype's top-k, and o_proj's output is the module's, every
    cell bit for bit."""
    from tests.test_extract_dsa import built

    model = built(name).to(torch.bfloat16)
    folder = tmp_path / name
    model.save_pretrained(folder)
    problem = qkvcalc.extract(str(folder), layer=layer, input_ids=ids(), dtype="bfloat16")
    attn = at(model, "model.layers.{}.self_attn", layer)
    seen: dict = {}

    def hook(module: Any, args: Any, kwargs: Any, out: Any) -> None:
        seen["out"] = out[0][0]

    handles = [
        attn.register_forward_hook(hook, with_kwargs=True),
        attn.indexer.register_forward_hook(lambda m, a, out: seen.update(topk=out[0].clone())),
    ]
    try:
        with torch.no_grad():
            model(input_ids=torch.tensor([ids()]))
    finally:
        for handle in handles:
            handle.remove()
    trace = qkvcalc.explain(**problem, dtype="bfloat16")
    n = len(ids())
    kept = np.zeros((n, n))
    for i, row in enumerate(seen["topk"].tolist()):
        kept[i, [j for j in row if j <= i]] = 1  # a masked key it returned stays masked
    np.testing.assert_array_equal(trace.stage("index_topk").value, kept)
    assert _ulps(trace.output, seen["out"].double().numpy(), torch.bfloat16).max() == 0


def _ling(name: str, dtype: Any, folder: Any) -> Any:
    """Ling 3.0 (bailing_hybrid) saved in float32 and loaded in `dtype` as transformers loads
    it: conv1d, A_log and dt_bias stay float32 (_keep_in_fp32_modules_strict), with numbers the
    dtype cannot hold; everything else in the dtype. Saved again in the dtype (those three
    still float32), the folder extract reads."""
    import transformers

    from tests.test_extract_bailing import build

    build(name).to(torch.float32).save_pretrained(folder / "f32")
    kw = {"attn_implementation": "eager", "experts_implementation": "eager"}
    model = transformers.BailingHybridForCausalLM.from_pretrained(folder / "f32", dtype=dtype, **kw)
    model.save_pretrained(folder / "low")
    return transformers.BailingHybridForCausalLM.from_pretrained(folder / "low", dtype="auto", **kw)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", ["bailing", "bailing-wide"])
def test_a_real_ling_layer_in_its_dtype_is_reproduced(name: str, dtype: str, tmp_path) -> None:
    """Ling 3.0's Kimi Delta Attention layers, the bounded decay (bailing) and the unbounded
    one with three taps (bailing-wide), as transformers runs them in the dtype: qkvcalc rounds
    as Ling does (conv1d, A_log, dt_bias in float32, g cast to the dtype). Each head's g is the
    module's forget gate, bit for bit; in bfloat16 the layer's output is too, every cell. In
    float16 the module's chunked core and qkvcalc's recurrent one (both in float32) round
    apart in a few cells, as Kimi Linear's do: the output is no farther from the module's than
    a few units in the last place (measured: at most 4, in about 5% of the cells)."""
    from tests.test_extract_bailing import PATH

    dt = getattr(torch, dtype)
    model = _ling(name, dt, tmp_path)
    layers = [i for i in range(3) if type(at(model, PATH, i)).__name__.endswith("DeltaAttention")]
    assert len(layers) == 2
    seen: dict = {}
    for layer in layers:
        module = at(model, PATH, layer)
        assert module.conv1d.weight.dtype == torch.float32 and module.q_proj.weight.dtype == dt
        seen.clear()

        def hook(module: Any, args: Any, kwargs: Any, out: Any) -> None:
            x = args[0] if args else kwargs["hidden_states"]
            seen.update(x=x[0], out=(out[0] if isinstance(out, tuple) else out)[0])

        handles = [
            module.register_forward_hook(hook, with_kwargs=True),
            module.forget_gate.register_forward_hook(lambda m, a, out: seen.update(g=out[0])),
        ]
        try:
            with torch.no_grad():
                model(input_ids=torch.tensor([ids()]))
        finally:
            for handle in handles:
                handle.remove()
        # extract --dtype bfloat16 of the float32 checkpoint; float16 (no extract --dtype of its
        # own) from the checkpoint saved in float16, in its own dtype
        source, asked = ("f32", dtype) if dtype == "bfloat16" else ("low", "auto")
        problem = qkvcalc.extract(str(tmp_path / source), layer=layer, input_ids=ids(), dtype=asked)
        taps = np.asarray(problem["kimi_delta"]["conv"], dtype=float)
        assert not np.array_equal(taps, taps.astype(np.float32).astype(dt_np(dtype)))  # float32's
        assert np.array_equal(np.asarray(problem["x"], dtype=float), seen["x"].double().numpy())
        trace = qkvcalc.explain(**problem, dtype=dtype)
        g = seen["g"].double().numpy()  # [n, H, d]
        for h in range(1, problem["heads"] + 1):
            np.testing.assert_array_equal(trace.stage("gates", h).value[:, :-1], g[:, h - 1])
        ulps = _ulps(trace.output, seen["out"].double().numpy(), dt)
        if dtype == "bfloat16":
            assert ulps.max() == 0, ((ulps == 0).mean(), ulps.max())
        else:
            assert ulps.max() <= 8 and (ulps == 0).mean() >= 0.9, ((ulps == 0).mean(), ulps.max())


def dt_np(dtype: str) -> Any:
    import ml_dtypes

    return {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}[dtype]
