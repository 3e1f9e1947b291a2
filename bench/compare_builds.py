#!/usr/bin/env python3
"""Two builds of Tessel timed against each other: `bench/run.sh` (make bench) on build A and
build B alternately, A B B A A B ..., so the machine's drift falls on both alike. Per shape it
prints each build's median Tessel time and the median over pairs of B/A (< 1: B faster), with
OpenBLAS's B/A beside it: OpenBLAS is the same library in both runs, so its ratio shows how far
the machine itself moved between the runs of a pair.

Usage: bench/compare_builds.py BUILD_A BUILD_B [--pairs N] [--log FILE] [-- tessel_bench args...]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

ROW = re.compile(r"^(\w+)\s+(\d+x\d+x\d+)\s+([\d.]+)\s+([\d.]+)\s+[\d.]+x")


def run_bench(build, extra):
    here = os.path.dirname(os.path.abspath(__file__))
    argv = [os.path.join(here, "run.sh"), build] + extra
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        m = ROW.match(line)
        if m and m.group(1) not in rows:
            rows[m.group(1)] = (m.group(2), float(m.group(3)), float(m.group(4)))
    return out, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--log")
    ap.add_argument("extra", nargs="*")
    args = ap.parse_args()
    runs = {"A": [], "B": []}
    log = open(args.log, "w") if args.log else None
    for p in range(args.pairs):
        order = ["A", "B"] if p % 2 == 0 else ["B", "A"]
        for which in order:
            build = args.a if which == "A" else args.b
            out, rows = run_bench(build, args.extra)
            runs[which].append(rows)
            if log:
                log.write(f"=== {which} ({build}) pair {p + 1} {time.strftime('%H:%M:%S')}\n{out}\n")
                log.flush()
    print(f"A = {args.a}, B = {args.b}; {args.pairs} pairs, order A B / B A alternating")
    print(f"{'shape':14} {'MxKxN':16} {'A ms':>9} {'B ms':>9} {'B/A':>7} {'BLAS B/A':>9}")
    for shape in runs["A"][0]:
        if not all(shape in r for r in runs["A"] + runs["B"]):
            continue
        a = [r[shape][1] for r in runs["A"]]
        b = [r[shape][1] for r in runs["B"]]
        ratio = statistics.median(bb / aa for aa, bb in zip(a, b))
        blas = statistics.median(rb[shape][2] / ra[shape][2] for ra, rb in zip(runs["A"], runs["B"]))
        print(f"{shape:14} {runs['A'][0][shape][0]:16} {statistics.median(a):9.3f} {statistics.median(b):9.3f} "
              f"{ratio:7.3f} {blas:9.3f}")
    print("(B/A: median over pairs of B's Tessel ms / A's; < 1.000 means B is faster)")


if __name__ == "__main__":
    sys.exit(main())
