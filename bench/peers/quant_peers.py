"""PyTorch's weight-only int8 linear on the CPU beside its f32 and bf16 linear, at the decode shapes
of bench/quant_decode_shapes.txt: torch.ops.aten._weight_int8pack_mm (the op torchao's
int8_weight_only uses on the CPU: w int8 [N, K], one f32 scale per output channel), F.linear in
f32 and in bf16, interleaved per round in one process, each call after the same cache flush as
tessel_bench's decode rows (write and read 256 MiB on every thread). Prints medians and the
ratios to torch's own f32, the figures to set beside Tessel's (docs/results/quant_decode_intel.txt),
which come from tessel_bench's own rounds.

Usage: .venv-peers/bin/python bench/peers/quant_peers.py [--rounds N] [--threads T]
"""
import argparse
import os
import statistics
import time

import torch
import torch.nn.functional as F

SHAPES = [("decode_1", 1, 4096, 4096), ("decode_4", 4, 4096, 4096), ("decode_16", 16, 4096, 4096),
          ("llama_up_1", 1, 4096, 11008)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    flush = torch.empty(256 << 18, dtype=torch.float32)  # 256 MiB

    def flushed(f):
        flush.add_(1.0)  # writes and reads every line, on torch's threads
        t = time.perf_counter()
        f()
        return time.perf_counter() - t

    print(f"torch {torch.__version__}, {a.threads} threads, {a.rounds} rounds; ms are medians, caches flushed "
          f"before every call")
    print(f"{'shape':<12} {'f32 ms':>8} {'bf16 ms':>8} {'x f32':>6} {'int8 ms':>8} {'x f32':>6}  int8 check")
    for name, m, k, n in SHAPES:
        g = torch.Generator().manual_seed(1)
        x = torch.rand(m, k, generator=g) * 2 - 1
        w = (torch.rand(n, k, generator=g) * 2 - 1) / k ** 0.5  # [N, K], as nn.Linear stores it
        scale = w.abs().amax(dim=1) / 127
        q = torch.clamp(torch.round(w / scale[:, None]), -128, 127).to(torch.int8)
        xb, wb = x.bfloat16(), w.bfloat16()
        y8 = torch.ops.aten._weight_int8pack_mm(x, q, scale)
        want = F.linear(x, q.float() * scale[:, None])
        err = ((y8 - want).abs().max() / want.abs().max()).item()
        t = {"f32": [], "bf16": [], "int8": []}
        for _ in range(a.rounds):
            t["f32"].append(flushed(lambda: F.linear(x, w)))
            t["bf16"].append(flushed(lambda: F.linear(xb, wb)))
            t["int8"].append(flushed(lambda: torch.ops.aten._weight_int8pack_mm(x, q, scale)))
        med = {key: statistics.median(v) for key, v in t.items()}
        print(f"{name:<12} {med['f32'] * 1e3:8.3f} {med['bf16'] * 1e3:8.3f} {med['f32'] / med['bf16']:5.2f}x "
              f"{med['int8'] * 1e3:8.3f} {med['f32'] / med['int8']:5.2f}x  max rel {err:.1e}")


if __name__ == "__main__":
    main()
