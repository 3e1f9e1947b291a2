"""make bench-peers, the transformer block over a KV cache (algorithms/TransformerBlock.h): T new
tokens after PAST positions in the caches (prefill: PAST 0; decode: T = 1 ... 16 after PAST 512
and more) in float32, the caches written in place, timed in Tessel (plan() and CompiledGraph on
its own buffers, bench/peers/BlockSystem.h), torch eager, torch.compile (max-autotune,
parameters frozen, a static shape and a static cache) and jax.jit (caches donated), with the
FMA-peak and read-floor probes as more contenders, all in the same rounds in an order drawn
afresh per round.

Per shape: median ms, GFLOP/s (the projections' and MLP's 2 T K N each, causal attention's 4 D
per query-key pair per head), the share of the FMA peak (median over rounds of rate / the
probe's rate in the same round), the ratio to Tessel, the cold start and the check against a
float64 numpy block. Decode shapes add the bytes a step must read (every weight, and K and V of
all S positions) over the time, as a share of the read-floor probe's rate.

Usage: block_peers.py [--build BUILD] [--shapes FILE] [--only a,b] [--rounds N] ...
"""
import os
import sys

import numpy as np

from attention_peers import parse_args as attention_args
from attention_peers import print_rows, run_main
from workers import PROBES, SYSTEMS
import run_peers
from run_peers import Bench

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT = ["tessel_block", "fma_probe", "read_probe", "torch_block", "torch_compile_block", "jax_block"]
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
    return run_peers.load_shapes(path, only, lambda w: (w[0], *(int(x) for x in w[1:8])))


def rotary_tables(first, tokens, d):
    j = np.arange(d) % (d // 2)
    theta = 10000.0 ** (-2.0 * j / d)
    angle = np.arange(first, first + tokens)[:, None] * theta[None, :]
    return np.cos(angle), np.sin(angle)


def reference(x, cos, sin, k_cache, v_cache, w, heads, kv_heads):
    """The block in float64 numpy, head by head: the new tokens' keys and values after the
    caches' first S - T positions, queries the last T positions."""
    f = {k: v.astype(np.float64) for k, v in w.items()}
    x, cos, sin = x.astype(np.float64), cos.astype(np.float64), sin.astype(np.float64)
    t, d = x.shape[0], cos.shape[1]
    past = k_cache.shape[0] - t
    norm = lambda u, g: u / np.sqrt((u * u).mean(axis=1, keepdims=True) + 1e-5) * g
    rotary = lambda u: u * cos[:, None, :] + np.concatenate((-u[..., d // 2:], u[..., :d // 2]), -1) * sin[:, None, :]
    h = norm(x, f["attn_norm"])
    q = rotary((h @ f["wq"]).reshape(t, heads, d))
    k = np.concatenate((k_cache[:past].astype(np.float64), rotary((h @ f["wk"]).reshape(t, kv_heads, d))))
    v = np.concatenate((v_cache[:past].astype(np.float64), (h @ f["wv"]).reshape(t, kv_heads, d)))
    o = np.empty((t, heads, d))
    masked = np.arange(past + t)[None, :] > past + np.arange(t)[:, None]
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
        name, t, past, hidden, heads, kv, d, ffn = shape
        rng = np.random.default_rng(3000 + index)
        uniform = lambda shape, half: rng.uniform(-half, half, shape).astype(np.float32)
        # Weights scaled as a trained model's (uniform in +-sqrt(3 / fan_in)); norm gains near 1.
        w = {k: (1 + uniform(s, 0.1)) if len(s) == 1 else uniform(s, np.sqrt(3.0 / s[0]))
             for k, s in weight_shapes(shape).items()}
        x = uniform((t, hidden), 1.0)
        cos, sin = (a.astype(np.float32) for a in rotary_tables(past, t, d))
        # The past's keys and values, then T positions the call writes (NaN until it does).
        k_cache, v_cache = (np.concatenate((uniform((past, kv, d), 1.0), np.full((t, kv, d), np.nan, np.float32)))
                            for _ in range(2))
        for what, a in {"x": x, "cos": cos, "sin": sin, "k_cache": k_cache, "v_cache": v_cache, **w}.items():
            a.tofile(os.path.join(folder, what + ".f32"))
        return (reference(x, cos, sin, k_cache, v_cache, w, heads, kv),
                f"load_block {name} {t} {past} {hidden} {heads} {kv} {d} {ffn} {folder}", 0)


    def run_shape(self, shape, index):
        rows = super().run_shape(shape, index)
        self.time_groups(rows, "tessel_block", 7)
        return rows


def weight_shapes(shape):
    _, t, past, hidden, heads, kv, d, ffn = shape
    return {"attn_norm": (hidden,), "wq": (hidden, heads * d), "wk": (hidden, kv * d), "wv": (hidden, kv * d),
            "wo": (heads * d, hidden), "mlp_norm": (hidden,), "w_gate": (hidden, ffn), "w_up": (hidden, ffn),
            "w_down": (ffn, hidden)}


def flops(shape):
    _, t, past, hidden, heads, kv, d, ffn = shape
    projections = 2.0 * t * hidden * (heads * d + 2 * kv * d) + 2.0 * t * heads * d * hidden
    pairs = t * past + t * (t + 1) / 2  # query-key pairs a causal step attends
    return projections + 3 * 2.0 * t * hidden * ffn + heads * 4.0 * d * pairs


def bytes_read(shape):
    """What a step must read at least: every weight once, and K and V of every position."""
    _, t, past, hidden, heads, kv, d, ffn = shape
    weights = sum(int(np.prod(s)) for s in weight_shapes(shape).values())
    return 4.0 * (weights + 2 * (past + t) * kv * d)


def print_shape(shape, rows, out, peers_share=True):
    name, t, past, hidden, heads, kv, d, ffn = shape
    work = flops(shape)
    step = f"decode of {t} after {past} positions" if past else f"prefill of {t} tokens"
    print(f"\n{name} ({step}, hidden {hidden}, heads {heads} over {kv} kv heads of {d}, MLP {ffn}; "
          f"{work / 1e9:.2f} GFLOP per call)", file=out)
    print_rows(rows, work, "tessel_block", out, peers_share, width=30, cold_digits=1)
    print_groups(rows, out)
    probe = rows.get("read_probe", {})
    if not past or not probe.get("median"):
        return
    floor = probe["flops"] / probe["median"]  # the probe's bytes per second
    moved = bytes_read(shape)
    print(f"  read floor: {moved / 2**20:.0f} MiB per step (weights, K and V); probe {floor / 1e9:.1f} GB/s = "
          f"{moved / floor * 1e3:.2f} ms", file=out)
    for system, row in rows.items():
        if system not in PROBES and row.get("median"):
            print(f"    {SYSTEMS[system][1]:<30} {moved / row['median'] / 1e9:6.1f} GB/s  "
                  f"{100 * moved / row['median'] / floor:5.1f}% of the read floor", file=out)


def print_groups(rows, out):
    """Tessel's groups, timed one by one: share of the call, and the roofline (the longer of the
    flops at the FMA probe's rate and the bytes at the read probe's) over the measured time."""
    row, fma, read = rows.get("tessel_block", {}), rows.get("fma_probe", {}), rows.get("read_probe", {})
    groups = row.get("groups")
    if not groups or not fma.get("median") or not read.get("median"):
        return
    peak, floor = fma["flops"] / fma["median"], read["flops"] / read["median"]
    total = sum(g[2] for g in groups)
    print(f"  Tessel's groups, timed one by one (sum {total * 1e3:.3f} ms); roofline: flops at {peak / 1e9:.0f} GFLOP/s "
          f"or bytes at {floor / 1e9:.1f} GB/s, the longer", file=out)
    print(f"    {'group':<18} {'kind':<16} {'ms':>8} {'share':>6} {'GFLOP':>7} {'MiB':>8} {'% roofline':>10}", file=out)
    for name, kind, t, f, b in sorted(groups, key=lambda g: -g[2]):
        if t <= 0:
            continue  # a view: nothing runs
        bound = max(f / peak, b / floor)
        print(f"    {name:<18} {kind:<16} {t * 1e3:8.3f} {100 * t / total:5.1f}% {f / 1e9:7.2f} {b / 2**20:8.1f} "
              f"{100 * bound / t:9.1f}%", file=out)


def main(argv):
    args = parse_args(argv)
    run_main(args, load_shapes(args.shapes, args.only), BlockBench, "transformer block over a KV cache",
             ["Tessel's call is CompiledGraph::run_buffers on its own float32 buffers (no conversion), the caches written "
              "in place; every peer writes its caches in place too."], print_shape)


if __name__ == "__main__":
    main(sys.argv[1:])
