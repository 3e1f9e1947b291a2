"""make bench-peers, the transformer block (algorithms/TransformerBlock.h): prefill of T tokens in
float32, timed in Tessel (plan() and CompiledGraph, bench/peers/BlockSystem.h), torch eager,
torch.compile (max-autotune, parameters frozen, a static shape) and jax.jit, with the FMA-peak
probe as one more contender, all in the same rounds in an order drawn afresh per round.

Per shape: median ms, GFLOP/s (the projections' and MLP's 2 T K N each, causal attention's
2 T^2 D per head), the share of the FMA peak (median over rounds of rate / the probe's rate in the
same round), the ratio to Tessel, the cold start and the check against a float64 numpy block.

Usage: block_peers.py [--build BUILD] [--shapes FILE] [--only a,b] [--rounds N] ...
"""
import os
import sys
import tempfile
import time

import numpy as np

from attention_peers import parse_args as attention_args
from attention_peers import peak_share
import report
from run_peers import Bench, host_isa, run_all, start_workers
from workers import PROBES, SYSTEMS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT = ["tessel_block", "fma_probe", "torch_block", "torch_compile_block", "jax_block"]
WEIGHTS = ("attn_norm", "wq", "wk", "wv", "wo", "mlp_norm", "w_gate", "w_up", "w_down")


def parse_args(argv):
    argv = list(argv)
    if not any(a.startswith("--shapes") for a in argv):
        argv += ["--shapes", os.path.join(ROOT, "bench", "block_shapes.txt")]
    if not any(a.startswith("--systems") for a in argv):
        argv += ["--systems", ",".join(DEFAULT)]
    a = attention_args(argv)
    a.out = a.out if "--out" in argv else os.path.join(a.build, "bench-peers-block")
    return a


def load_shapes(path, only):
    shapes = []
    for line in open(path):
        words = line.split("#")[0].split()
        if words:
            shapes.append((words[0], *(int(w) for w in words[1:7])))
    wanted = [s for s in only.split(",") if s]
    return [s for s in shapes if not wanted or s[0] in wanted]


def rotary_tables(tokens, d):
    j = np.arange(d) % (d // 2)
    theta = 10000.0 ** (-2.0 * j / d)
    angle = np.arange(tokens)[:, None] * theta[None, :]
    return np.cos(angle), np.sin(angle)


def reference(x, cos, sin, w, heads, kv_heads):
    """The block in float64 numpy, head by head."""
    f = {k: v.astype(np.float64) for k, v in w.items()}
    x, cos, sin = x.astype(np.float64), cos.astype(np.float64), sin.astype(np.float64)
    t, d = x.shape[0], cos.shape[1]
    norm = lambda u, g: u / np.sqrt((u * u).mean(axis=1, keepdims=True) + 1e-5) * g
    rotary = lambda u: u * cos[:, None, :] + np.concatenate((-u[..., d // 2:], u[..., :d // 2]), -1) * sin[:, None, :]
    h = norm(x, f["attn_norm"])
    q = rotary((h @ f["wq"]).reshape(t, heads, d))
    k = rotary((h @ f["wk"]).reshape(t, kv_heads, d))
    v = (h @ f["wv"]).reshape(t, kv_heads, d)
    o = np.empty((t, heads, d))
    masked = np.triu(np.ones((t, t), bool), 1)
    for i in range(heads):
        j = i // (heads // kv_heads)
        z = q[:, i, :] @ k[:, j, :].T / np.sqrt(d)
        z[masked] = -np.inf
        z = np.exp(z - z.max(axis=1, keepdims=True))
        o[:, i, :] = (z / z.sum(axis=1, keepdims=True)) @ v[:, j, :]
    x1 = x + o.reshape(t, heads * d) @ f["wo"]
    h2 = norm(x1, f["mlp_norm"])
    gate = h2 @ f["w_gate"]
    return x1 + (gate / (1 + np.exp(-gate)) * (h2 @ f["w_up"])) @ f["w_down"]


class BlockBench(Bench):
    def inputs(self, shape, index, folder):
        name, t, hidden, heads, kv, d, ffn = shape
        rng = np.random.default_rng(3000 + index)
        uniform = lambda shape, half: rng.uniform(-half, half, shape).astype(np.float32)
        shapes = {"attn_norm": (hidden,), "wq": (hidden, heads * d), "wk": (hidden, kv * d), "wv": (hidden, kv * d),
                  "wo": (heads * d, hidden), "mlp_norm": (hidden,), "w_gate": (hidden, ffn), "w_up": (hidden, ffn),
                  "w_down": (ffn, hidden)}
        # Weights scaled as a trained model's (uniform in +-sqrt(3 / fan_in)); norm gains near 1.
        w = {k: (1 + uniform(s, 0.1)) if len(s) == 1 else uniform(s, np.sqrt(3.0 / s[0])) for k, s in shapes.items()}
        x = uniform((t, hidden), 1.0)
        cos, sin = (a.astype(np.float32) for a in rotary_tables(t, d))
        for what, a in {"x": x, "cos": cos, "sin": sin, **w}.items():
            a.tofile(os.path.join(folder, what + ".f32"))
        return reference(x, cos, sin, w, heads, kv), f"load_block {name} {t} {hidden} {heads} {kv} {d} {ffn} {folder}", 0


def flops(shape):
    _, t, hidden, heads, kv, d, ffn = shape
    projections = 2.0 * t * hidden * (heads * d + 2 * kv * d) + 2.0 * t * heads * d * hidden
    return projections + 3 * 2.0 * t * hidden * ffn + heads * 2.0 * t * t * d  # causal: half of 4 T^2 D


def print_shape(shape, rows, out, peers_share=True):
    name, t, hidden, heads, kv, d, ffn = shape
    work = flops(shape)
    print(f"\n{name} (T {t}, hidden {hidden}, heads {heads} over {kv} kv heads of {d}, MLP {ffn}; "
          f"{work / 1e9:.1f} GFLOP per call)", file=out)
    print(f"  {'system':<30} {'median ms':>10} {'spread':>7} {'GFLOP/s':>8} {'% peak':>7} {'vs Tessel':>10} {'cold s':>8}  check",
          file=out)
    for system, row in rows.items():
        if system in PROBES:
            continue
        label = SYSTEMS[system][1]
        cold = f"{row['cold']:8.1f}" if row.get("cold") is not None else f"{'-':>8}"
        if row.get("median") is None:
            print(f"  {label:<30} {'-':>10} {'-':>7} {'-':>8} {'-':>7} {'-':>10} {cold}  {report.check_text(row)}  "
                  f"{row.get('status', '')}", file=out)
            continue
        share = peak_share(rows, system, work) if peers_share or system == "tessel_block" else None
        ratio = report.ratio_to_tessel(rows, system, "tessel_block")
        print(f"  {label:<30} {row['median'] * 1e3:10.2f} {report.spread(row['samples']):6.0f}% {work / row['median'] / 1e9:8.1f} "
              + (f"{100 * share:6.1f}%" if share is not None else f"{'-':>7}")
              + (f" {ratio:9.2f}x" if ratio is not None else f" {'-':>10}") + f" {cold}  {report.check_text(row)}", file=out)
    p = rows.get("fma_probe", {})
    if p.get("median"):
        print(f"  FMA-peak probe: {p['flops'] / p['median'] / 1e9:.1f} GFLOP/s (median over rounds)", file=out)


def main(argv):
    args = parse_args(argv)
    shapes = load_shapes(args.shapes, args.only)
    os.makedirs(args.out, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="run-", dir=args.out)
    isa, model = host_isa()
    started = time.perf_counter()
    workers = start_workers(args, scratch)
    results = run_all(BlockBench(args, workers, scratch), shapes, workers, scratch)
    t = workers.get("tessel")
    print(f"== make bench-peers, transformer block (prefill): float32, {args.threads} threads, medians over {args.rounds} rounds ==")
    print(f"CPU: {model}; ISA: {isa} (lscpu flags); Tessel target {t.info.get('target', args.target) if t else '?'}")
    print("Peers: " + "; ".join(w.info.get("version", f"{rt}: {w.dead or 'unknown'}") for rt, w in workers.items() if rt != "tessel"))
    print("Rounds time every system once, in an order drawn afresh per round; the FMA-peak probe is one of them.")
    print("Tessel's call is CompiledGraph::run: every kernel, plus converting x, cos, sin in and y, k, v out (float64 tensors).")
    for entry in results:
        print_shape(entry["shape"], entry["rows"], sys.stdout, peers_share=args.target == "host")
    print(f"\nWhole run {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
