"""qkvcalc's speed and memory, each beside a floor measured in the same run, as ratios.

    .venv/bin/python benchmarks/bench.py            # everything (about two minutes)
    .venv/bin/python benchmarks/bench.py --quick    # start-up only
    .venv/bin/python benchmarks/bench.py --runs 7   # more runs per case (medians are shown)
    .venv/bin/python benchmarks/bench.py --no-trace # without the whole GPT-2 trace (3 min a run)
    .venv/bin/python benchmarks/bench.py --only backward --runs 3   # the cases named so

Every case is a fresh process; its wall time is measured around it and its peak memory is the
child's own maximum resident set size (os.wait4's rusage, the per-child form of
getrusage(RUSAGE_CHILDREN)). Cases and their floors run interleaved, round after round, so a
busy machine slows both alike; the table shows medians, and a ratio is the median of the
ratios within each round. The floors:

1. start-up: `python -c "import numpy, rich.console, rich.table, typer"`, the cost of
   qkvcalc's own dependencies, against `qkvcalc explain --preset doc` (target ≤ 1.2×),
   `qkvcalc --version`, which imports no numpy and must beat it (< 1×), and `qkvcalc --help`
   (target ≤ 1.3×): it imports no numpy either, but typer's panel help (typer.rich_utils)
   loads rich's markdown and traceback modules with it, about 50 ms that the floor does not.
2. a GPT-2-small layer (n = 1024 tokens, d_model = 768, 12 heads, W_O, causal mask) written
   once as JSON: a minimal script that reads it with the standard library and computes the
   same attention with numpy, against `explain FILE --detail brief` and
   `explain FILE --format json --detail brief` (targets ≤ 1.5× wall time and peak memory).
   A reference row, without a target, is the same script writing its output as JSON: the
   cost of the 786,432 numbers that `--format json` writes and the floor does not.
3. the backward pass of a GPT-2-small-sized layer (n = 128, d_model = 768, 12 heads, W_O,
   causal mask, a target output): `explain FILE --backward --detail brief` against a minimal
   numpy forward and backward that writes its gradients (dW_Q, dW_K, dW_V, dW_O, dX) as JSON
   (target ≤ 1.5× wall time and peak memory).
   And that layer with `--dtype bfloat16` (every stage in bfloat16 beside its float64 twin)
   against `explain FILE --detail brief` itself (target ≤ 2× wall time and peak memory).
4. the whole trace of that layer as JSON (`explain FILE --format json`: every stage of every
   head, 60 million numbers, 1.2 GB of text, streamed stage by stage): its peak memory against
   the script of 2. (target ≤ 1.5×), its wall time beside a floor that computes the same stages
   with numpy and writes the same numbers with json.dumps, a matrix at a time (reported, no
   target: both are mostly the formatting of 60 million floats).

5. a Qwen3-Next-sized Gated DeltaNet layer (hidden 2048, 16 key heads × 128, 32 value heads ×
   128, a convolution of 4 taps; n = 256 tokens) in a float32 checkpoint of two layers:
   `extract CKPT --layer 0 --dtype float64 --output L.npz` then `explain L.npz --detail brief`
   (one shell command; both processes' time, the larger peak) against a minimal numpy script
   that reads the same checkpoint (safetensors), computes the layer's output (the embedding's
   rows, the input RMSNorm, the projections, the convolution, the gates, the recurrence, the
   gated norm, out_proj) and writes it as JSON (target ≤ 2× wall time). Beside it, reported
   with no target: importing torch, transformers and Qwen3-Next's modeling code alone, which
   extract cannot leave out (it runs the model up to the layer and checks its problem against
   the layer's own output). It needs torch and transformers (the models extra); `--gdn-small`
   runs it at a quarter of the width.

The exit status is 0 when every target is met, 1 otherwise. The interactive page of the same
layer (its size, and how soon chromium has it ready against loading the static page) is
benchmarks/page.py: it needs chromium, chromedriver and selenium.
"""

from __future__ import annotations

import argparse
import compileall
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
# what a user runs: the console script beside this Python (`python -m qkvcalc` where it is not
# installed, which costs runpy's few milliseconds more)
SCRIPT = Path(PY).with_name("qkvcalc")
QKVCALC = [str(SCRIPT)] if SCRIPT.is_file() else [PY, "-m", "qkvcalc"]

FLOOR_SCRIPT = """
import json, sys
import numpy as np

with open(sys.argv[1], "rb") as f:
    doc = json.load(f)
x, wq, wk, wv, wo = (np.array(doc[k], dtype=np.float64) for k in ("x", "wq", "wk", "wv", "wo"))
heads = doc["heads"]
del doc
n, d_k = x.shape[0], wq.shape[1] // heads
q, k, v = x @ wq, x @ wk, x @ wv
allowed = np.tril(np.ones((n, n), dtype=bool))
outs = []
for h in range(heads):
    cols = slice(h * d_k, (h + 1) * d_k)
    s = np.where(allowed, q[:, cols] @ k[:, cols].T / np.sqrt(d_k), -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    outs.append(e / e.sum(axis=1, keepdims=True) @ v[:, cols])
out = np.hstack(outs) @ wo
if sys.argv[2:] == ["--write"]:  # the reference that also writes its output, as JSON
    sys.stdout.write(json.dumps(out.tolist()))
elif sys.argv[2:] == ["--trace"]:  # every stage's numbers, as qkvcalc's whole trace has them
    write = lambda a: sys.stdout.write(json.dumps(a.tolist()) + "\\n")
    write(x)
    concat = []
    for h in range(heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        qh, kh, vh = q[:, cols], k[:, cols], v[:, cols]
        for a in (qh, kh, vh, kh.T):
            write(a)
        s = qh @ kh.T
        write(s)
        s = s / np.sqrt(d_k)
        write(s)
        s = np.where(allowed, s, -np.inf)
        write(s)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        write(e)
        w = e / e.sum(axis=1, keepdims=True)
        write(w)
        concat.append(w @ vh)
        write(concat[-1])
    write(np.hstack(concat))
    write(out)
    write(out)
else:
    print(out.shape, float(out.sum()))
"""


@dataclass
class Case:
    name: str
    argv: list[str]
    floor: str | None = None  # the name of the case this one is compared with
    target: float | None = None  # ratio to the floor that must not be exceeded
    strict: bool = False  # the ratio must be below the target, not merely at most
    wall_floor: str | None = None  # wall time compared with this case instead (no target)
    walls: list[float] = field(default_factory=list)
    peaks: list[float] = field(default_factory=list)  # MB

    def wall(self) -> float:
        return statistics.median(self.walls)

    def peak(self) -> float:
        return statistics.median(self.peaks)

    def ratio(self, floor: Case) -> float:
        """The median of the round-by-round ratios of wall time: each round runs a case right
        after its floor, so a machine that speeds up or slows down between rounds (this one
        drifts up to 2× within minutes) moves both sides of a ratio alike."""
        return statistics.median(c / f for c, f in zip(self.walls, floor.walls, strict=True))


def measure(argv: list[str]) -> tuple[float, float]:
    """Run once in a fresh process; (wall seconds, peak RSS in MB). Output goes to /dev/null."""
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
    with open(os.devnull, "wb") as sink:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.PIPE, cwd=ROOT, env=env)
        assert proc.stderr is not None
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{err.decode()[-2000:]}")
    return wall, usage.ru_maxrss / 1024  # Linux: kilobytes


# A GPT-2-small-sized layer: argv = FILE n seed [--target] (the backward case adds a target)
GPT2_LAYER = """
import json, sys
import numpy as np

path, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(seed)
d = 768
doc = {"x": rng.standard_normal((n, d)).astype(np.float32).tolist()}
for name in ("wq", "wk", "wv", "wo"):
    doc[name] = (rng.standard_normal((d, d)) * 0.02).astype(np.float32).tolist()
if "--target" in sys.argv:
    doc["target"] = rng.standard_normal((n, d)).astype(np.float32).tolist()
doc.update(heads=12, mask="causal")
with open(path, "w") as f:
    json.dump(doc, f)
"""

# The floor of the backward case: the same layer's forward and backward in plain numpy, its
# weight and input gradients written as JSON (what a student's own backward would print).
BACKWARD_FLOOR = """
import json, sys
import numpy as np

with open(sys.argv[1], "rb") as f:
    doc = json.load(f)
x, wq, wk, wv, wo, t = (
    np.array(doc[k], dtype=np.float64) for k in ("x", "wq", "wk", "wv", "wo", "target")
)
heads = doc["heads"]
del doc
n, d_k = x.shape[0], wq.shape[1] // heads
q, k, v = x @ wq, x @ wk, x @ wv
allowed = np.tril(np.ones((n, n), dtype=bool))
weights, outs = [], []
for h in range(heads):
    c = slice(h * d_k, (h + 1) * d_k)
    s = np.where(allowed, q[:, c] @ k[:, c].T / np.sqrt(d_k), -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    weights.append(e / e.sum(axis=1, keepdims=True))
    outs.append(weights[-1] @ v[:, c])
concat = np.hstack(outs)
d_out = concat @ wo - t
d_concat, d_wo = d_out @ wo.T, concat.T @ d_out
dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
for h, a in enumerate(weights):
    c = slice(h * d_k, (h + 1) * d_k)
    do = d_concat[:, c]
    dv[:, c] = a.T @ do
    da = do @ v[:, c].T
    ds = a * (da - (a * da).sum(axis=1, keepdims=True)) / np.sqrt(d_k)
    dq[:, c], dk[:, c] = ds @ k[:, c], ds.T @ q[:, c]
grads = {"wq": x.T @ dq, "wk": x.T @ dk, "wv": x.T @ dv, "wo": d_wo,
         "x": dq @ wq.T + dk @ wk.T + dv @ wv.T}
sys.stdout.write(json.dumps({name: g.tolist() for name, g in grads.items()}))
"""


# A Qwen3-Next checkpoint whose layer 0 is Gated DeltaNet: argv = FOLDER SCALE (1: the real
# widths, 4: a quarter of them); layer 1 is a small full-attention layer (a model of linear
# layers alone cannot run in transformers), the MLPs small and dense; random float32 weights
GDN_CHECKPOINT = """
import sys
import torch, transformers

folder, scale = sys.argv[1], int(sys.argv[2])
config = transformers.Qwen3NextConfig(
    vocab_size=512, hidden_size=2048 // scale, intermediate_size=64, num_hidden_layers=2,
    layer_types=["linear_attention", "full_attention"], linear_num_key_heads=16 // scale,
    linear_key_head_dim=128, linear_num_value_heads=32 // scale, linear_value_head_dim=128,
    linear_conv_kernel_dim=4, num_attention_heads=2, num_key_value_heads=1, head_dim=64,
    num_experts=0, mlp_only_layers=[0, 1], max_position_embeddings=1024,
)
torch.manual_seed(0)
model = transformers.Qwen3NextForCausalLM(config)
with torch.no_grad():
    for name, param in model.named_parameters():
        param.copy_(torch.randn_like(param) * (0.02 if param.dim() > 1 else 0.3))
model.save_pretrained(folder)
"""

# The floor of the Gated DeltaNet case: argv = FOLDER "IDS"; the layer's output as JSON
GDN_FLOOR = """
import json, sys
import numpy as np
from safetensors.numpy import load_file

folder, ids = sys.argv[1], [int(i) for i in sys.argv[2].split()]
with open(folder + "/config.json") as f:
    config = json.load(f)
w = {k: v.astype(np.float64) for k, v in load_file(folder + "/model.safetensors").items()}
nk, nv = config["linear_num_key_heads"], config["linear_num_value_heads"]
dk, dv, eps = config["linear_key_head_dim"], config["linear_value_head_dim"], config["rms_norm_eps"]
r, n, p = nv // nk, len(ids), "model.layers.0."
h = w["model.embed_tokens.weight"][ids]
x = h / np.sqrt((h * h).mean(1, keepdims=True) + eps) * (1 + w[p + "input_layernorm.weight"])
a = p + "linear_attn."
qkvz = (x @ w[a + "in_proj_qkvz.weight"].T).reshape(n, nk, 2 * dk + 2 * r * dv)
ba = (x @ w[a + "in_proj_ba.weight"].T).reshape(n, nk, 2 * r)
q, k, v, z = np.split(qkvz, np.cumsum([dk, dk, r * dv]), axis=2)
b, al = ba[:, :, :r].reshape(n, nv), ba[:, :, r:].reshape(n, nv)
mixed = np.concatenate([q.reshape(n, -1), k.reshape(n, -1), v.reshape(n, -1)], axis=1)
taps = w[a + "conv1d.weight"][:, 0, :]  # [channels, K]
K = taps.shape[1]
conv = sum(
    taps[:, j] * np.vstack([np.zeros((K - 1 - j, mixed.shape[1])), mixed[: n - (K - 1 - j)]])
    for j in range(K)
)
mixed = conv / (1 + np.exp(-conv))
q, k, v = np.split(mixed, [nk * dk, 2 * nk * dk], axis=1)
q = np.repeat(q.reshape(n, nk, dk), r, axis=1)
k = np.repeat(k.reshape(n, nk, dk), r, axis=1)
v = v.reshape(n, nv, dv)
q = q / np.sqrt((q * q).sum(-1, keepdims=True) + 1e-6) / np.sqrt(dk)
k = k / np.sqrt((k * k).sum(-1, keepdims=True) + 1e-6)
beta = 1 / (1 + np.exp(-b))
s = al + w[a + "dt_bias"]
g = -np.exp(w[a + "A_log"]) * np.where(s > 20, s, np.log1p(np.exp(np.minimum(s, 20))))
S = np.zeros((nv, dk, dv))
o = np.zeros((n, nv, dv))
for t in range(n):
    S *= np.exp(g[t])[:, None, None]
    mem = np.einsum("hkv,hk->hv", S, k[t])
    S += k[t][:, :, None] * ((v[t] - mem) * beta[t][:, None])[:, None, :]
    o[t] = np.einsum("hkv,hk->hv", S, q[t])
o = o / np.sqrt((o * o).mean(-1, keepdims=True) + eps) * w[a + "norm.weight"]
z = z.reshape(n, nv, dv)
out = (o * z / (1 + np.exp(-z))).reshape(n, nv * dv) @ w[a + "out_proj.weight"].T
sys.stdout.write(json.dumps(out.tolist()))
"""


def gdn_cases(tmp: Path, small: bool) -> list[Case]:
    """The Gated DeltaNet case and its floor (none without torch and transformers)."""
    try:
        import transformers  # noqa: F401
    except ImportError:
        print("no transformers: the Gated DeltaNet case is left out", file=sys.stderr)
        return []
    folder, script, layer = tmp / "qwen3_next", tmp / "gdn_floor.py", tmp / "gdn_layer.npz"
    print(f"writing a Qwen3-Next Gated DeltaNet checkpoint to {folder} …", file=sys.stderr)
    subprocess.run([PY, "-c", GDN_CHECKPOINT, str(folder), "4" if small else "1"], check=True)
    script.write_text(GDN_FLOOR)
    ids = " ".join(str((i * 7919) % 512) for i in range(256))
    qkv = " ".join(QKVCALC)
    both = (
        f"{qkv} extract {folder} --layer 0 --ids '{ids}' --dtype float64 --output {layer} && "
        f"{qkv} explain {layer} --detail brief --max-bytes 100000000000 "
        "--max-elements 100000000000"
    )
    floor = "floor: numpy gated deltanet + json"
    # what extract cannot leave out (it runs the model up to the layer, and checks the problem
    # against the layer's own output): importing torch, transformers and the model's code,
    # reported beside the floor so the share qkvcalc's own work takes can be read off
    imports = (
        "import torch, transformers; from transformers.models.qwen3_next import modeling_qwen3_next"
    )
    return [
        Case(floor, [PY, str(script), str(folder), ids]),
        Case("gdn: the imports alone (reported)", [PY, "-c", imports], floor),
        Case("gdn extract + explain --detail brief", ["sh", "-c", both], floor, 2.0),
    ]


def write_gpt2_backward(path: Path) -> None:
    """n = 128, d_model = 768, 12 heads, W_O, causal, and a target output (float32 values)."""
    subprocess.run([PY, "-c", GPT2_LAYER, str(path), "128", "2021", "--target"], check=True)


def write_gpt2_layer(path: Path) -> None:
    """n = 1024, d_model = 768, 12 heads, W_O, causal; float32 values, as a model's tensors
    would be dumped (`tensor.tolist()`). Written by a child process: this one stays small,
    because a child's peak memory counts what it shared with its parent before exec."""
    subprocess.run([PY, "-c", GPT2_LAYER, str(path), "1024", "2019"], check=True)


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{os.cpu_count()} CPUs ({cpu}), Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}"
    )


def cases(quick: bool, tmp: Path, trace: bool = True, gdn_small: bool = False) -> list[Case]:
    qkv = QKVCALC
    found: list[Case] = [
        Case(
            "floor: import numpy, rich, typer",
            [PY, "-c", "import numpy, rich.console, rich.table, typer"],
        ),
        Case(
            "explain --preset doc",
            [*qkv, "explain", "--preset", "doc"],
            "floor: import numpy, rich, typer",
            1.2,
        ),
        Case("--version", [*qkv, "--version"], "floor: import numpy, rich, typer", 1.0, True),
        Case("--help", [*qkv, "--help"], "floor: import numpy, rich, typer", 1.3),
    ]
    if quick:
        return found
    data, script = tmp / "gpt2_layer.json", tmp / "floor.py"
    print(f"writing a GPT-2-small layer to {data} …", file=sys.stderr)
    write_gpt2_layer(data)
    script.write_text(FLOOR_SCRIPT)
    floor = "floor: json + numpy script"
    found += [
        Case(floor, [PY, str(script), str(data)]),
        # a reference, no target: what writing the output as JSON (786,432 numbers) adds
        Case("floor + json.dumps(output)", [PY, str(script), str(data), "--write"], floor),
        Case("gpt2 --detail brief", [*qkv, "explain", str(data), "--detail", "brief"], floor, 1.5),
        Case(
            "gpt2 --format json --detail brief",
            [*qkv, "explain", str(data), "--format", "json", "--detail", "brief"],
            floor,
            1.5,
        ),
        # the precision lab: the same layer in bfloat16, every stage beside its float64 twin,
        # against the float64 run itself
        Case(
            "gpt2 --dtype bfloat16 --detail brief",
            [*qkv, "explain", str(data), "--dtype", "bfloat16", "--detail", "brief"],
            "gpt2 --detail brief",
            2.0,
        ),
    ]
    grads, grads_floor = tmp / "gpt2_backward.json", tmp / "backward_floor.py"
    write_gpt2_backward(grads)
    grads_floor.write_text(BACKWARD_FLOOR)
    floor_b = "floor: numpy backward + json"
    found += [
        Case(floor_b, [PY, str(grads_floor), str(grads)]),
        Case(
            "gpt2 n=128 --backward --detail brief",
            [*qkv, "explain", str(grads), "--backward", "--detail", "brief"],
            floor_b,
            1.5,
        ),
    ]
    found += gdn_cases(tmp, gdn_small)
    if trace:
        dumps_floor = "floor + json.dumps(every stage)"
        found += [
            Case(dumps_floor, [PY, str(script), str(data), "--trace"], floor),
            Case(
                "gpt2 --format json (whole trace)",
                [*qkv, "explain", str(data), "--format", "json"],
                floor,
                1.5,
                wall_floor=dumps_floor,
            ),
        ]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per case (default 5)")
    parser.add_argument("--quick", action="store_true", help="start-up cases only")
    parser.add_argument(
        "--no-trace", action="store_true", help="without the whole-trace case (minutes a run)"
    )
    parser.add_argument("--only", help="only the cases whose name holds this word (and floors)")
    parser.add_argument(
        "--gdn-small", action="store_true", help="the Gated DeltaNet case at a quarter width"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="qkvcalc-bench-") as tmp:
        todo = cases(args.quick, Path(tmp), trace=not args.no_trace, gdn_small=args.gdn_small)
        if args.only:
            kept = [c for c in todo if args.only in c.name]
            needed: set[str | None] = set()
            frontier = kept
            while frontier:  # the floors, and the floors' own floors
                names = {c.floor for c in frontier} | {c.wall_floor for c in frontier}
                frontier = [c for c in todo if c.name in names - needed]
                needed |= names
            todo = [c for c in todo if c in kept or c.name in needed]
        # Bytecode as an installed package has it: written now, even where PYTHONDONTWRITEBYTECODE
        # would stop the runs from writing it (they would then compile every module every time).
        compileall.compile_dir(ROOT / "qkvcalc", quiet=1)
        for case in todo:  # one warm-up each: the file cache
            measure(case.argv)
        for r in range(args.runs):
            print(f"round {r + 1}/{args.runs} …", file=sys.stderr)
            for case in todo:
                wall, peak = measure(case.argv)
                case.walls.append(wall)
                case.peaks.append(peak)
    by_name = {case.name: case for case in todo}
    print(f"machine: {machine()}")
    print(f"medians of {args.runs} runs; a ratio is the median of the ratios within each round\n")
    print(f"{'case':36} {'wall s':>8} {'peak MB':>8} {'× wall':>7} {'× mem':>7}  target")
    failed = False
    for case in todo:
        line = f"{case.name:36} {case.wall():8.3f} {case.peak():8.0f}"
        if case.floor and case.target is None:  # a reference: its ratio, no verdict
            line += f" {case.ratio(by_name[case.floor]):7.2f}"
        elif case.floor and case.target is not None and case.wall_floor:
            # the target is on memory; wall time is shown beside its own floor
            floor, wall_floor = by_name[case.floor], by_name[case.wall_floor]
            r_wall, r_mem = case.ratio(wall_floor), case.peak() / floor.peak()
            ok = r_mem <= case.target
            failed |= not ok
            verdict = "ok" if ok else "MISSED"
            line += f" {r_wall:7.2f} {r_mem:7.2f}  ≤ {case.target}× memory: {verdict}"
            line += f"\n{'':36} (× wall: against {wall_floor.name}; × mem: against {floor.name})"
        elif case.floor and case.target is not None:
            floor = by_name[case.floor]
            r_wall, r_mem = case.ratio(floor), case.peak() / floor.peak()
            # memory targets: the GPT-2 cases
            mem_counts = floor.name.startswith(
                ("floor: json", "floor: numpy backward", "gpt2 --detail brief")
            )
            ok = (r_wall < case.target if case.strict else r_wall <= case.target) and (
                not mem_counts or r_mem <= case.target
            )
            failed |= not ok
            sign = "<" if case.strict else "≤"
            what = "wall and memory" if mem_counts else "wall"
            verdict = "ok" if ok else "MISSED"
            line += f" {r_wall:7.2f} {r_mem:7.2f}  {sign} {case.target}× {what}: {verdict}"
        print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
