"""A real layer in bfloat16 (issue 36, "real layers"): a tiny LLaMA saved as a bfloat16
checkpoint, `qkvcalc extract --dtype bfloat16` of one layer, then `qkvcalc explain --dtype
bfloat16 --policy eager` of the problem it wrote, equals the layer's own eager attention run by
transformers in bfloat16 — its input x and its output projection's output, bit for bit — and the
precision summary says where the bfloat16 run departs from its float64 twin. The same for
DeepSeek-V3's multi-head latent attention, DiffLlama's differential attention and Laguna's softplus
output gate.

Nothing downloads: the model is built from its config with random weights (tests.test_extract).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import run_qkvcalc

te = pytest.importorskip("tests.test_extract", reason="qkvcalc extract needs torch")
te_mla = pytest.importorskip("tests.test_extract_mla", reason="qkvcalc extract needs torch")
te_more = pytest.importorskip("tests.test_extract_more", reason="qkvcalc extract needs torch")

LAYER = 1


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """The tiny LLaMA saved in bfloat16, and what transformers itself computes at layer LAYER
    when it loads that checkpoint in bfloat16 with eager attention: x and o_proj's output."""
    torch, transformers = te.torch, te.transformers
    folder = tmp_path_factory.mktemp("bf16") / "llama"
    te.build("llama").to(torch.bfloat16).save_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        folder, dtype=torch.bfloat16, attn_implementation="eager"
    ).eval()
    seen: dict = {}
    attention = model.model.layers[LAYER].self_attn

    def grab_x(module, args, kwargs):
        seen["x"] = (args[0] if args else kwargs["hidden_states"])[0].float().numpy()

    def grab_out(module, args, out):
        seen["out"] = out[0].float().numpy()

    attention.register_forward_pre_hook(grab_x, with_kwargs=True)
    attention.o_proj.register_forward_hook(grab_out)
    ids = te.token_ids()
    with torch.no_grad():
        model(torch.tensor([ids]))
    return folder, ids, seen


def test_a_bfloat16_checkpoints_layer_is_reproduced_bit_for_bit(checkpoint, tmp_path):
    folder, ids, seen = checkpoint
    ids_text = " ".join(map(str, ids))
    done = run_qkvcalc(
        "extract",
        str(folder),
        "--layer",
        str(LAYER),
        "--ids",
        ids_text,
        "--dtype",
        "bfloat16",
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    problem = tmp_path / "layer.json"
    problem.write_text(done.stdout, encoding="utf-8")
    assert np.array_equal(np.array(json.loads(done.stdout)["x"], dtype=np.float64), seen["x"])

    done = run_qkvcalc(
        "explain",
        str(problem),
        "--dtype",
        "bfloat16",
        "--policy",
        "eager",
        "--format",
        "json",
        "--detail",
        "brief",
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    trace = json.loads(done.stdout)
    (final,) = [s for s in trace["stages"] if s["id"] == "output" and s["head"] is None]
    mine = np.array(final["value"], dtype=np.float64)
    assert mine.shape == seen["out"].shape
    assert np.array_equal(mine, seen["out"])  # the model's own bfloat16 numbers, every cell

    # and where it departs from the float64 twin: the summary names the stage, with its error
    twin = np.array(final["float64"], dtype=np.float64)
    assert not np.array_equal(mine, twin)
    precision = trace["precision"]
    assert (precision["dtype"], precision["policy"]) == ("bfloat16", "eager")
    assert precision["most_added"] and precision["first_nonfinite"] is None


# DeepSeek-V3's multi-head latent attention with a query latent (tests/test_extract_mla.py's
# model, transformers' default RoPE in its rotate_half layout)
DEEPSEEK_FIELDS = {
    "rope_interleave": False,
    "rope_parameters": {"rope_type": "default", "rope_theta": 500.0},
}


def _bf16_layer(folder, config: str, fields: dict, model: str, **extra) -> dict:
    """The tiny model saved in bfloat16, loaded by transformers in bfloat16 with eager
    attention (`extra`: more arguments of from_pretrained): layer LAYER's input x and its
    o_proj's output."""
    torch, transformers = te.torch, te.transformers
    te.build_from(config, fields, model).to(torch.bfloat16).save_pretrained(folder)
    loaded = transformers.AutoModelForCausalLM.from_pretrained(
        folder, dtype=torch.bfloat16, attn_implementation="eager", **extra
    ).eval()
    seen: dict = {}
    attention = loaded.model.layers[LAYER].self_attn

    def grab_x(module, args, kwargs):
        seen["x"] = (args[0] if args else kwargs["hidden_states"])[0].float().numpy()

    def grab_out(module, args, out):
        seen["out"] = out[0].float().numpy()

    attention.register_forward_pre_hook(grab_x, with_kwargs=True)
    attention.o_proj.register_forward_hook(grab_out)
    with torch.no_grad():
        loaded(torch.tensor([te.token_ids()]))
    return seen


def _explained(folder, tmp_path, policy: str) -> dict:
    """extract --dtype bfloat16 of layer LAYER, then explain --dtype bfloat16 of it."""
    problem = tmp_path / "layer.json"
    if not problem.exists():
        ids_text = " ".join(map(str, te.token_ids()))
        done = run_qkvcalc(
            "extract", str(folder), "--layer", str(LAYER), "--ids", ids_text,
            "--dtype", "bfloat16", "--output", str(problem), timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    done = run_qkvcalc(
        "explain", str(problem), "--dtype", "bfloat16", "--policy", policy,
        "--format", "json", "--detail", "brief", timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    trace = json.loads(done.stdout)
    (final,) = [s for s in trace["stages"] if s["id"] == "output" and s["head"] is None]
    return {"trace": trace, "out": np.array(final["value"], dtype=np.float64)}


@pytest.mark.parametrize("case", ["default-half", "yarn-interleaved"])
def test_a_bfloat16_deepseek_v3_mla_layer_is_reproduced_bit_for_bit(tmp_path, case):
    """Multi-head latent attention (its latents' RMSNorms, the shared rotary key, the join)
    as DeepSeek-V3's eager attention computes it in bfloat16: every cell of o_proj's output,
    with the default RoPE in the rotate_half layout and with YaRN in the interleaved one (its
    attention factor, mscale in the scale). Not by chance: the same layer with every op
    rounded to bfloat16 (naive) differs."""
    folder = tmp_path / "deepseek"
    fields = {**te_mla.DEEPSEEK, **DEEPSEEK_FIELDS}
    if case != "default-half":
        fields = te_mla.CASES[case]
    seen = _bf16_layer(
        folder, "DeepseekV3Config", fields, "DeepseekV3ForCausalLM",
        experts_implementation="eager",
    )  # fmt: skip
    eager = _explained(folder, tmp_path, "eager")
    assert "mla" in json.loads((tmp_path / "layer.json").read_text(encoding="utf-8"))
    assert eager["out"].shape == seen["out"].shape
    assert np.array_equal(eager["out"], seen["out"])  # the model's own numbers, every cell
    naive = _explained(folder, tmp_path, "naive")
    assert not np.array_equal(naive["out"], seen["out"])
    assert eager["trace"]["precision"]["first_nonfinite"] is None


def test_a_bfloat16_diffllama_layer_is_reproduced_bit_for_bit(tmp_path):
    """Differential attention as DiffLlama's eager attention computes it in bfloat16: each map
    times V'' apart, λ (a bfloat16 tensor) times the second, the group norm in float32 inside,
    times (1 − λ_init): every cell of o_proj's output. The same layer with the maps' difference
    taken first and every op in bfloat16 (naive) differs."""
    folder = tmp_path / "diffllama"
    fields = {**te_more.LLAMA, "num_key_value_heads": 2}
    seen = _bf16_layer(folder, "DiffLlamaConfig", fields, "DiffLlamaForCausalLM")
    eager = _explained(folder, tmp_path, "eager")
    assert "differential" in json.loads((tmp_path / "layer.json").read_text(encoding="utf-8"))
    assert eager["out"].shape == seen["out"].shape
    assert np.array_equal(eager["out"], seen["out"])  # the model's own numbers, every cell
    naive = _explained(folder, tmp_path, "naive")
    assert not np.array_equal(naive["out"], seen["out"])
    assert eager["trace"]["precision"]["first_nonfinite"] is None


@pytest.mark.parametrize("gating", [True, "per-element"])
def test_a_bfloat16_laguna_layer_is_reproduced_bit_for_bit(tmp_path, gating):
    """Laguna's softplus output gate as its attention computes it in bfloat16: g_proj in
    bfloat16, F.softplus of it in float32, back to bfloat16, times each head's output (one
    logit per head, or one per element): every cell of o_proj's output, on its full-attention
    layer (partial RoPE, 2 of its own heads). The same layer with every op in bfloat16 (naive)
    differs."""
    from tests.test_extract_plain import LAGUNA

    folder = tmp_path / "laguna"
    seen = _bf16_layer(
        folder, "LagunaConfig", {**LAGUNA, "gating": gating}, "LagunaForCausalLM",
        experts_implementation="eager",
    )  # fmt: skip
    eager = _explained(folder, tmp_path, "eager")
    problem = json.loads((tmp_path / "layer.json").read_text(encoding="utf-8"))
    assert problem["gate_act"] == "softplus" and problem["heads"] == 2
    assert eager["out"].shape == seen["out"].shape
    assert np.array_equal(eager["out"], seen["out"])  # the model's own numbers, every cell
    naive = _explained(folder, tmp_path, "naive")
    assert not np.array_equal(naive["out"], seen["out"])
    assert eager["trace"]["precision"]["first_nonfinite"] is None
