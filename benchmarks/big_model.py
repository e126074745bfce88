"""A 7B-class model's last layer in float64 on this machine: `qkvcalc extract` against a
minimal script that streams the same layers, measured in the same run, as ratios.

    .venv/bin/python benchmarks/big_model.py --yes             # writes ~13.5 GB, then deletes it
    .venv/bin/python benchmarks/big_model.py --yes --runs 3    # more rounds (medians are shown)
    .venv/bin/python benchmarks/big_model.py --yes --layers 8  # a shorter stack (4096 wide still)

Opt-in: it writes a random bf16 checkpoint of Llama-2-7B's configuration (d_model 4096, 32
layers, 32 heads, MLP 11008, vocabulary 32000: 6.7 billion parameters, about 13.5 GB) to a
temporary folder under --dir (default: benchmarks/ of this clone's file system), shard by
shard with safetensors (one shard a layer, so at most one layer's tensors are in memory while
it is written; never the whole model), and deletes it at the end. Without --yes, or without the
room (df: the checkpoint plus 3 GB), it says so and exits 0.

The cases, each a fresh process (peak memory: the child's own maximum resident set, from
os.wait4; wall time around it), interleaved round after round with their floors:

1. floor: a script of ~50 lines that opens the checkpoint with safetensors (memory-mapped),
   runs layers 0…L−1 in float64 with torch (RMSNorm, RoPE, causal attention, SwiGLU MLP), each
   weight converted to float64 when it is used and dropped after, takes layer L's attention
   input, and writes x and layer L's W_Q, W_K, W_V, W_O (float64) with np.savez;
2. `qkvcalc extract CKPT --layer L --ids … --dtype float64 --output layer.npz` (target ≤ 1.5×
   the floor's wall time and peak memory);
3. the same with `--output layer.json` (reported against the floor: the JSON text of 67 million
   numbers, about 1.2 GB, no target).

Peak memory is measured twice: private (the child's RssAnon, sampled every 10 ms: what the run
takes for itself, the target's measure) and RSS (os.wait4's ru_maxrss), which also counts the
pages of the checkpoint a run has read through a memory map (transformers maps safetensors;
the floor's safe_open copies each tensor out): those are the file cache's, shared, and the
kernel takes them back under pressure, so RSS is reported without a target.

Both read the same bf16 bytes (the file cache is warm after a warm-up run of each); the
problem's x of the two must agree to 1e-9 relative (checked after the runs).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench import PY, ROOT  # noqa: E402  (benchmarks/ is not a package)

CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "num_hidden_layers": 32,
    "vocab_size": 32000,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "hidden_act": "silu",
    "tie_word_embeddings": False,
    "dtype": "bfloat16",
}
IDS = "1 15043 3186 29892 920 526 366 29973 306 626 263 1243 1813 310 278 4086"  # 16 tokens

# Writes the checkpoint: argv = FOLDER LAYERS. One safetensors shard per layer, made and
# written before the next is made; the embeddings and the head in a shard of their own.
WRITER = """
import json, sys
from pathlib import Path
import torch
from safetensors.torch import save_file

folder, layers = Path(sys.argv[1]), int(sys.argv[2])
config = json.loads((folder / "config.json").read_text())
d, inner, vocab = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
gen = torch.Generator().manual_seed(2026)

def rand(*shape, scale=0.02):
    return (torch.randn(*shape, generator=gen) * scale).to(torch.bfloat16)

def ones(n):
    return (1 + rand(n, scale=0.1).float()).to(torch.bfloat16)

weight_map, shards = {}, layers + 1
def write(index, tensors):
    name = f"model-{index + 1:05d}-of-{shards:05d}.safetensors"
    save_file(tensors, str(folder / name), metadata={"format": "pt"})
    weight_map.update({key: name for key in tensors})

write(0, {"model.embed_tokens.weight": rand(vocab, d), "model.norm.weight": ones(d),
          "lm_head.weight": rand(vocab, d)})
for i in range(layers):
    p = f"model.layers.{i}."
    write(i + 1, {
        p + "input_layernorm.weight": ones(d), p + "post_attention_layernorm.weight": ones(d),
        **{p + f"self_attn.{n}_proj.weight": rand(d, d) for n in "qkvo"},
        p + "mlp.gate_proj.weight": rand(inner, d), p + "mlp.up_proj.weight": rand(inner, d),
        p + "mlp.down_proj.weight": rand(d, inner),
    })
index = {"metadata": {}, "weight_map": weight_map}
(folder / "model.safetensors.index.json").write_text(json.dumps(index))
"""

# The floor: argv = FOLDER LAYER IDS OUT.npz
FLOOR = """
import json, math, sys
from pathlib import Path
import numpy as np
import torch
from safetensors import safe_open

folder, L, out = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[4]
ids = [int(i) for i in sys.argv[3].split()]
cfg = json.loads((folder / "config.json").read_text())
where = json.loads((folder / "model.safetensors.index.json").read_text())["weight_map"]
f64 = torch.float64
def get(name):
    with safe_open(str(folder / where[name]), "pt") as f:
        return f.get_tensor(name).to(f64)
d, H, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["rms_norm_eps"]
hd, n = d // H, len(ids)
with safe_open(str(folder / where["model.embed_tokens.weight"]), "pt") as f:
    h = f.get_slice("model.embed_tokens.weight")[ids].to(f64)
inv = 1.0 / cfg["rope_theta"] ** (torch.arange(0, hd, 2, dtype=f64) / hd)
ang = torch.arange(n, dtype=f64)[:, None] * inv
cos, sin = torch.cat((ang, ang), -1).cos(), torch.cat((ang, ang), -1).sin()
rms = lambda x, w: w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))
rot = lambda x: torch.cat((-x[..., hd // 2:], x[..., : hd // 2]), -1)
heads = lambda x: x.view(n, H, hd).transpose(0, 1)
causal = torch.full((n, n), -math.inf, dtype=f64).triu(1)
with torch.no_grad():
    for i in range(L):
        p = f"model.layers.{i}."
        x = rms(h, get(p + "input_layernorm.weight"))
        q, k, v = (heads(x @ get(p + f"self_attn.{c}_proj.weight").T) for c in "qkv")
        q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
        a = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(hd) + causal, -1)
        h = h + (a @ v).transpose(0, 1).reshape(n, d) @ get(p + "self_attn.o_proj.weight").T
        x = rms(h, get(p + "post_attention_layernorm.weight"))
        gate = torch.nn.functional.silu(x @ get(p + "mlp.gate_proj.weight").T)
        h = h + (gate * (x @ get(p + "mlp.up_proj.weight").T)) @ get(p + "mlp.down_proj.weight").T
    p = f"model.layers.{L}."
    x = rms(h, get(p + "input_layernorm.weight"))
    w = {c: get(p + f"self_attn.{c}_proj.weight").T.contiguous().numpy() for c in "qkvo"}
np.savez(out, x=x.numpy(), **{f"w{c}": m for c, m in w.items()})
"""


def measure(argv: list[str]) -> tuple[float, float, float]:
    """Run once in a fresh process: (wall seconds, peak private MB, peak RSS MB). Private is
    the child's anonymous memory (RssAnon of /proc/PID/status, sampled every 10 ms): what the
    run takes for itself. RSS (os.wait4's ru_maxrss) also counts the pages of the memory-mapped
    checkpoint the run has read, which are the file cache's and given back under pressure."""
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
    with open(os.devnull, "wb") as sink, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=sink, stderr=err, cwd=ROOT, env=env)
        private = 0
        while True:
            done, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if done:
                break
            try:
                with open(f"/proc/{proc.pid}/status", encoding="ascii") as status:
                    for line in status:
                        if line.startswith("RssAnon:"):
                            private = max(private, int(line.split()[1]))
            except (OSError, ValueError):
                pass
            time.sleep(0.01)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(argv)} failed:\n{err.read().decode()[-2000:]}")
    return wall, private / 1024, usage.ru_maxrss / 1024


def room(path: Path) -> int:
    usage = shutil.disk_usage(path)
    return usage.free


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--yes", action="store_true", help="write the ~13.5 GB checkpoint")
    parser.add_argument("--runs", type=int, default=1, help="rounds (default 1)")
    parser.add_argument("--layers", type=int, default=32, help="layers (default 32, as 7B)")
    parser.add_argument("--dir", type=Path, default=HERE, help="where the checkpoint goes")
    parser.add_argument("--no-json", action="store_true", help="without the JSON case")
    args = parser.parse_args()
    config = {**CONFIG, "num_hidden_layers": args.layers}
    d, inner, vocab = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    size = 2 * (args.layers * (4 * d * d + 3 * d * inner + 2 * d) + 2 * vocab * d + d)
    if not args.yes:
        print(f"skipped: this benchmark writes a {size / 1e9:.1f} GB checkpoint; run it with --yes")
        return 0
    if room(args.dir) < size + 3e9:
        print(f"skipped: {args.dir} has {room(args.dir) / 1e9:.1f} GB free, and the checkpoint "
              f"takes {size / 1e9:.1f} GB (and 3 GB more for the outputs)")  # fmt: skip
        return 0
    work = Path(tempfile.mkdtemp(prefix="qkvcalc-big-", dir=args.dir))
    try:
        ckpt = work / "llama-7b-random"
        ckpt.mkdir()
        (ckpt / "config.json").write_text(json.dumps(config))
        print(f"writing {size / 1e9:.1f} GB of random bf16 weights to {ckpt} …", file=sys.stderr)
        subprocess.run([PY, "-c", WRITER, str(ckpt), str(args.layers)], check=True)
        last = args.layers - 1
        (work / "floor.py").write_text(FLOOR)
        qkv = [PY, "-m", "qkvcalc", "extract", str(ckpt), "--layer", str(last), "--ids", IDS]
        cases = {
            "floor: streaming script (.npz)": [
                PY, str(work / "floor.py"), str(ckpt), str(last), IDS, str(work / "floor.npz")
            ],
            "extract --dtype float64 -o .npz": [
                *qkv, "--dtype", "float64", "--output", str(work / "layer.npz")
            ],
        }  # fmt: skip
        if not args.no_json:
            cases["extract --dtype float64 -o .json"] = [
                *qkv, "--dtype", "float64", "--output", str(work / "layer.json")
            ]  # fmt: skip
        walls: dict[str, list[float]] = {name: [] for name in cases}
        peaks: dict[str, list[float]] = {name: [] for name in cases}  # private MB
        rss: dict[str, list[float]] = {name: [] for name in cases}
        for argv in cases.values():  # a warm-up each: the file cache
            measure(argv)
        for r in range(args.runs):
            print(f"round {r + 1}/{args.runs} …", file=sys.stderr)
            for name, argv in cases.items():
                wall, peak, resident = measure(argv)
                walls[name].append(wall)
                peaks[name].append(peak)
                rss[name].append(resident)
        import numpy as np

        with np.load(work / "floor.npz") as floor, np.load(work / "layer.npz") as layer:
            for key in ("x", "wq", "wk", "wv", "wo"):
                scale = float(np.max(np.abs(floor[key])))
                diff = float(np.max(np.abs(floor[key] - layer[key])))
                assert diff <= 1e-9 * scale, (key, diff, scale)
        floor_name = next(iter(cases))
        print(f"{args.layers} layers of d_model {d}, layer {last}, {len(IDS.split())} tokens; "
              f"medians of {args.runs} rounds")  # fmt: skip
        print("private: the run's own (anonymous) memory; RSS also counts the mapped checkpoint")
        print(f"{'case':34} {'wall s':>7} {'private':>8} {'RSS MB':>7} {'× wall':>7} "
              f"{'× priv':>7} {'× RSS':>6}  target")  # fmt: skip
        failed = False
        for name in cases:
            wall, peak = statistics.median(walls[name]), statistics.median(peaks[name])
            resident = statistics.median(rss[name])
            line = f"{name:34} {wall:7.1f} {peak:8.0f} {resident:7.0f}"
            if name != floor_name:
                r_wall = statistics.median(
                    c / f for c, f in zip(walls[name], walls[floor_name], strict=True)
                )
                r_mem = peak / statistics.median(peaks[floor_name])
                r_rss = resident / statistics.median(rss[floor_name])
                line += f" {r_wall:7.2f} {r_mem:7.2f} {r_rss:6.2f}"
                if name.endswith(".npz"):
                    ok = r_wall <= 1.5 and r_mem <= 1.5
                    failed |= not ok
                    line += f"  ≤ 1.5× wall and private: {'ok' if ok else 'MISSED'}"
            print(line)
        return 1 if failed else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
