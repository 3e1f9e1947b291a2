"""make bench-peers, attention: o = softmax(q k^T / sqrt(D) [causal]) v in float32, timed in Tessel
(the fused attention group, driver/AttentionLayer.h), torch's scaled_dot_product_attention (eager
and under torch.compile) and jax.nn.dot_product_attention under jax.jit, with the FMA-peak probe as
one more contender, all in the same rounds in an order drawn afresh per round (run_peers.Bench).

Per shape: median ms, GFLOP/s (4 B S L D, half that when causal: the work a causal kernel must
do), the share of the FMA peak as the median over rounds of (rate / the probe's rate in the same
round), the ratio to Tessel, the cold start and the check against float64 numpy.

With --train, forward and backward: o and dq, dk, dv from dO (Tessel: the attention group,
rowsum(dO * o) and the attention-backward group of algorithms/Attention.h's attention_train_graph;
torch: autograd through SDPA, eager and compiled; jax: jax.vjp under one jit), on the shapes of
bench/attention_train_shapes.txt, with FlashAttention's count of the work: 4 B S L D forward and
10 B S L D backward (5 contractions), half when causal, and Tessel's groups timed one by one.

Usage: attention_peers.py [--build BUILD] [--shapes FILE] [--only a,b] [--rounds N] [--train] ...
"""
import argparse
import math
import os
import statistics
import sys
import tempfile
import time

import numpy as np

import report
import run_peers
from run_peers import Bench, host_isa, run_all, start_workers
from workers import PROBES, SYSTEMS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT = ["tessel_attention", "fma_probe", "torch_sdpa", "torch_compile_sdpa", "jax_attention"]
TRAIN = ["tessel_attention_train", "fma_probe", "torch_sdpa", "torch_compile_sdpa", "jax_attention"]


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="attention_peers.py", description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--shapes", default="", help="default: bench/attention_shapes.txt (--train: attention_train_shapes.txt)")
    ap.add_argument("--train", action="store_true", help="forward and backward")
    ap.add_argument("--only", default="", help="comma-separated shape names (default: every shape)")
    ap.add_argument("--systems", default="")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=0.2)
    ap.add_argument("--min-calls", type=int, default=3)
    ap.add_argument("--gap", type=float, default=0.1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--target", default="host", help="Halide target of Tessel's kernel (and the probe's ISA)")
    ap.add_argument("--prepare-timeout", type=float, default=3600)
    ap.add_argument("--out", default="")
    a = ap.parse_args(argv)
    a.shapes = a.shapes or os.path.join(ROOT, "bench", "attention_train_shapes.txt" if a.train else "attention_shapes.txt")
    a.systems = [s for s in (a.systems or ",".join(TRAIN if a.train else DEFAULT)).split(",") if s]
    if any(s not in SYSTEMS for s in a.systems) or a.rounds < 1:
        ap.error(f"systems must be among {', '.join(SYSTEMS)}; --rounds >= 1")
    a.schedule = "cpu_blocked"  # the GELU systems' schedule; unused here
    a.out = a.out or os.path.join(a.build, "bench-peers-attention" + ("-train" if a.train else ""))
    return a


def load_shapes(path, only):
    return run_peers.load_shapes(path, only, lambda w: (w[0], *(int(x) for x in w[1:6])))


def reference(q, k, v, causal):
    """float64 softmax(q k^T / sqrt(D)) v, one batch entry at a time (S x L at a time in memory)."""
    out = np.empty(q.shape, np.float64)
    s, l = q.shape[1], k.shape[1]
    mask = np.triu(np.ones((s, l), bool), 1) if causal else None
    for b in range(q.shape[0]):
        z = (q[b].astype(np.float64) @ k[b].astype(np.float64).T) / math.sqrt(q.shape[2])
        if causal:
            z[mask] = -np.inf
        z = np.exp(z - z.max(axis=1, keepdims=True))
        out[b] = (z / z.sum(axis=1, keepdims=True)) @ v[b].astype(np.float64)
    return out


def reference_train(q, k, v, d_out, causal):
    """float64 o, dq, dk, dv (attention's forward and backward), one after the other, flattened."""
    o, dq, dk, dv = (np.empty(q.shape, np.float64) for _ in range(4))
    s, l, scale = q.shape[1], k.shape[1], 1 / math.sqrt(q.shape[2])
    mask = np.triu(np.ones((s, l), bool), 1) if causal else None
    for b in range(q.shape[0]):
        qb, kb, vb, gb = (t[b].astype(np.float64) for t in (q, k, v, d_out))
        z = qb @ kb.T * scale
        if causal:
            z[mask] = -np.inf
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        o[b] = p @ vb
        ds = p * (gb @ vb.T - (gb * o[b]).sum(axis=1, keepdims=True))
        dq[b], dk[b], dv[b] = ds @ kb * scale, ds.T @ qb * scale, p.T @ gb
    return np.concatenate([t.reshape(-1) for t in (o, dq, dk, dv)])


class AttentionBench(Bench):
    def inputs(self, shape, index, folder):
        name, b, s, l, d, causal = shape
        if causal and s != l:
            sys.exit(f"attention_peers: {name}: causal shapes need S == L (torch and jax align the mask top-left)")
        rng = np.random.default_rng(2000 + index)
        data = {}
        for what, rows in (("q", s), ("k", l), ("v", l)) + ((("do", s),) if self.a.train else ()):
            data[what] = rng.uniform(-1, 1, (b, rows, d)).astype(np.float32)
            data[what].tofile(os.path.join(folder, what + ".f32"))
        if self.a.train:
            return (reference_train(data["q"], data["k"], data["v"], data["do"], causal),
                    f"load_attention_train {name} {b} {s} {l} {d} {causal} {folder}", 0)
        return reference(data["q"], data["k"], data["v"], causal), f"load_attention {name} {b} {s} {l} {d} {causal} {folder}", 0

    def run_shape(self, shape, index):
        rows = super().run_shape(shape, index)
        self.time_groups(rows, "tessel_attention_train", 5)
        return rows


def flops(shape, train=False):
    _, b, s, l, d, causal = shape
    return (14.0 if train else 4.0) * b * s * l * d / (2 if causal else 1)


def peak_share(rows, system, work):
    """Median over rounds of (system's rate / the probe's rate in the same round)."""
    p, r = rows.get("fma_probe"), rows.get(system)
    if not p or not r or p.get("median") is None or r.get("median") is None or not p.get("flops"):
        return None
    n = min(len(p["samples"]), len(r["samples"]))
    return statistics.median((work / r["samples"][i]) / (p["flops"] / p["samples"][i]) for i in range(n))


def print_rows(rows, work, own, out, peers_share=True, width=36, cold_digits=3):
    """One row per system: median ms, spread, GFLOP/s for `work` flops per call, share of the FMA peak
    (only `own`'s when peers_share is False: the probe then runs at Tessel's ISA, not the peers'),
    the ratio to `own`, the cold start and the check."""
    print(f"  {'system':<{width}} {'median ms':>10} {'spread':>7} {'GFLOP/s':>8} {'% peak':>7} {'vs Tessel':>10} {'cold s':>8}  check",
          file=out)
    for system, row in rows.items():
        if system in PROBES:
            continue
        label = SYSTEMS[system][1]
        cold = f"{row['cold']:8.{cold_digits}f}" if row.get("cold") is not None else f"{'-':>8}"
        if row.get("median") is None:
            print(f"  {label:<{width}} {'-':>10} {'-':>7} {'-':>8} {'-':>7} {'-':>10} {cold}  {report.check_text(row)}  "
                  f"{row.get('status', '')}", file=out)
            continue
        share = peak_share(rows, system, work) if peers_share or system == own else None
        ratio = report.ratio_to_tessel(rows, system, own)
        print(f"  {label:<{width}} {row['median'] * 1e3:10.3f} {report.spread(row['samples']):6.0f}% {work / row['median'] / 1e9:8.1f} "
              + (f"{100 * share:6.1f}%" if share is not None else f"{'-':>7}")
              + (f" {ratio:9.2f}x" if ratio is not None else f" {'-':>10}") + f" {cold}  {report.check_text(row)}", file=out)
    p = rows.get("fma_probe", {})
    if p.get("median"):
        print(f"  FMA-peak probe: {p['flops'] / p['median'] / 1e9:.1f} GFLOP/s (median over rounds)", file=out)


def print_shape(shape, rows, out, peers_share=True, train=False):
    name, b, s, l, d, causal = shape
    work = flops(shape, train)
    own = "tessel_attention_train" if train else "tessel_attention"
    print(f"\n{name} (B {b}, S {s}, L {l}, D {d}{', causal' if causal else ''}{', forward and backward' if train else ''}; "
          f"{work / 1e9:.2f} GFLOP per call)", file=out)
    print_rows(rows, work, own, out, peers_share)
    groups = rows.get(own, {}).get("groups")
    if groups:
        total = sum(g[2] for g in groups)
        print(f"  Tessel's groups, timed one by one (sum {total * 1e3:.3f} ms): " +
              ", ".join(f"{n} [{k}] {t * 1e3:.3f} ms ({100 * t / total:.0f}%)" for n, k, t, _, _ in groups), file=out)


def run_main(args, shapes, bench_class, title, notes, print_shape_fn):
    """Starts the workers, runs every shape in rounds, prints the header and one table per shape."""
    os.makedirs(args.out, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="run-", dir=args.out)
    isa, model = host_isa()
    started = time.perf_counter()
    workers = start_workers(args, scratch)
    results = run_all(bench_class(args, workers, scratch), shapes, workers, scratch)
    t = workers.get("tessel")
    print(f"== make bench-peers, {title}: float32, {args.threads} threads, medians over {args.rounds} rounds ==")
    print(f"CPU: {model}; ISA: {isa} (lscpu flags); Tessel target {t.info.get('target', args.target) if t else '?'}")
    print("Peers: " + "; ".join(w.info.get("version", f"{rt}: {w.dead or 'unknown'}") for rt, w in workers.items() if rt != "tessel"))
    print("Rounds time every system once, in an order drawn afresh per round; the FMA-peak probe is one of them.")
    if args.target != "host":
        print("--target is Tessel's (and the probe's) ISA only: the peers run at the host's, so only Tessel's rows get a % of peak.")
    for line in notes:
        print(line)
    for entry in results:
        print_shape_fn(entry["shape"], entry["rows"], sys.stdout, peers_share=args.target == "host")
    print(f"\nWhole run {time.perf_counter() - started:.0f} s")


def main(argv):
    args = parse_args(argv)
    title = "attention forward and backward" if args.train else "attention"
    run_main(args, load_shapes(args.shapes, args.only), AttentionBench, title, [],
             lambda shape, rows, out, peers_share: print_shape(shape, rows, out, peers_share, args.train))


if __name__ == "__main__":
    main(sys.argv[1:])
