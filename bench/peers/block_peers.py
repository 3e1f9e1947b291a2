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

import numpy as np

from attention_peers import parse_args as attention_args
from attention_peers import print_rows, run_main
import run_peers
from run_peers import Bench

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
    return run_peers.load_shapes(path, only, lambda w: (w[0], *(int(x) for x in w[1:7])))


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
    print_rows(rows, work, "tessel_block", out, peers_share, width=30, cold_digits=1)


def main(argv):
    args = parse_args(argv)
    run_main(args, load_shapes(args.shapes, args.only), BlockBench, "transformer block (prefill)",
             ["Tessel's call is CompiledGraph::run: every kernel, plus converting x, cos, sin in and y, k, v out "
              "(float64 tensors)."], print_shape)


if __name__ == "__main__":
    main(sys.argv[1:])
