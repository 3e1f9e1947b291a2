"""PyTorch's weight-only int8 and int4 linear on the CPU beside its f32 and bf16 linear, at the decode
shapes of bench/quant_decode_shapes.txt: torch.ops.aten._weight_int8pack_mm (the op torchao's
int8_weight_only uses on the CPU: w int8 [N, K], one f32 scale per output channel),
torch.ops.aten._weight_int4pack_mm_for_cpu (int4_weight_only's CPU op: groups of 32 or 128 along
K, scale and zero per group; here symmetric, zero 0, the rule of Tessel's quantized_int4), F.linear
in f32 and in bf16, interleaved per round in one process, each call after the same cache flush as
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


def int4_operands(w, group):
    """w [N, K] quantized symmetric per group of `group` along K (scale = max |w| / 7, values in
    [-8, 7]) in torch's int4 CPU format: unsigned nibbles q + 8 packed by
    _convert_weight_to_int4pack_for_cpu, and scales and zeros [K / group, N, 2] with torch's
    dequantization (q_u - 8) * scale + zero (zero 0). Returns (packed, scales_and_zeros, w4 [N, K])."""
    n, k = w.shape
    wg = w.reshape(n, k // group, group)
    scale = wg.abs().amax(dim=2) / 7
    q = torch.clamp(torch.round(wg / scale[..., None]), -8, 7)
    packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu((q + 8).to(torch.int32).reshape(n, k), 1)
    scales_and_zeros = torch.stack([scale.t(), torch.zeros_like(scale.t())], dim=2).contiguous()
    return packed, scales_and_zeros, (q * scale[..., None]).reshape(n, k)


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
    print(f"{'shape':<12} {'f32 ms':>8} {'bf16 ms':>8} {'x f32':>6} {'int8 ms':>8} {'x f32':>6} {'int4/32':>8} {'x f32':>6}"
          f" {'int4/128':>8} {'x f32':>6}  max rel error (int8 / int4 32 / int4 128)")
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
        int4 = {group: int4_operands(w, group) for group in (32, 128)}
        errors = [err]
        for group, (packed, scales, dequantized) in int4.items():
            y4 = torch.ops.aten._weight_int4pack_mm_for_cpu(x, packed, group, scales)
            want4 = F.linear(x, dequantized)
            errors.append(((y4 - want4).abs().max() / want4.abs().max()).item())
        t = {"f32": [], "bf16": [], "int8": [], 32: [], 128: []}
        for _ in range(a.rounds):
            t["f32"].append(flushed(lambda: F.linear(x, w)))
            t["bf16"].append(flushed(lambda: F.linear(xb, wb)))
            t["int8"].append(flushed(lambda: torch.ops.aten._weight_int8pack_mm(x, q, scale)))
            for group, (packed, scales, _) in int4.items():
                t[group].append(flushed(lambda: torch.ops.aten._weight_int4pack_mm_for_cpu(x, packed, group, scales)))
        med = {key: statistics.median(v) for key, v in t.items()}
        print(f"{name:<12} {med['f32'] * 1e3:8.3f} {med['bf16'] * 1e3:8.3f} {med['f32'] / med['bf16']:5.2f}x "
              f"{med['int8'] * 1e3:8.3f} {med['f32'] / med['int8']:5.2f}x {med[32] * 1e3:8.3f} {med['f32'] / med[32]:5.2f}x "
              f"{med[128] * 1e3:8.3f} {med['f32'] / med[128]:5.2f}x  " + " / ".join(f"{e:.1e}" for e in errors))


if __name__ == "__main__":
    main()
