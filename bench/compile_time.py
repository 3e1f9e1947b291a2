#!/usr/bin/env python3
"""Compile time of generated graphs: `tessel compile G.tsl --dim M=8 --emit lib --time-report` per
(shape, statements), one compile at a time. Prints wall seconds, peak RSS, ms per kernel op, the
distinct kernels compiled, and the three largest phases. The graphs are bench/compile_time_graphs.py's.
With --command run: `tessel run G.tsl --dim M=8 --kernel-cache off` instead (the JIT road, kernels
compiled on first use, checked against the interpreter): the first result's time after process start,
the kernels JIT-compiled and their compile seconds. --max-kernels N is passed to tessel (the compile
budget, compiler/CompileBudget.h; -1: none); the groups run as elementwise programs are counted.

  python3 bench/compile_time.py [--tessel build/apps/tessel] [--sizes 1000,10000] [--shapes chain,fan,nest] [--command run]
                                [--max-kernels N]
"""
import argparse, os, re, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tessel", default=os.path.join(HERE, "..", "build", "apps", "tessel"))
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--shapes", default="chain,fan,nest")
    ap.add_argument("--command", choices=["compile", "run"], default="compile")
    ap.add_argument("--max-kernels", type=int, default=None)
    a = ap.parse_args()
    if a.command == "run":
        print(f"{'shape':6} {'stmts':>7} {'groups':>7} {'kernels':>7} {'compiled':>8} {'compile s':>9} {'first s':>8} {'wall s':>8} {'RSS MiB':>8} {'programs':>8}")
    else:
        print(f"{'shape':6} {'stmts':>7} {'ops':>7} {'groups':>7} {'kernels':>7} {'wall s':>8} {'ms/op':>6} {'RSS MiB':>8} {'programs':>8}  largest phases")
    for shape in a.shapes.split(","):
        for n in [int(s) for s in a.sizes.split(",")]:
            with tempfile.TemporaryDirectory() as d:
                g = os.path.join(d, f"{shape}{n}.tsl")
                with open(g, "w") as f:
                    subprocess.run([sys.executable, os.path.join(HERE, "compile_time_graphs.py"), shape, str(n)], stdout=f, check=True)
                argv = [a.tessel, "compile", g, "--dim", "M=8", "--emit", "lib", "--time-report", "-o", os.path.join(d, "out"),
                        "--db", os.path.join(d, "db.sqlite")]
                if a.command == "run":
                    argv = [a.tessel, "run", g, "--dim", "M=8", "--kernel-cache", "off", "--db", os.path.join(d, "db.sqlite")]
                if a.max_kernels is not None:
                    argv += ["--max-kernels", str(a.max_kernels)]
                t0 = time.monotonic()
                p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                out = p.stdout.read()
                _, status, usage = os.wait4(p.pid, 0)
                wall = time.monotonic() - t0
                if status != 0:
                    print(f"{shape} {n}: tessel failed ({status}):\n{out[-2000:]}")
                    continue
                budget = re.search(r"^compile budget: \d+ distinct kernels.*?: (\d+) compiled .*?, (\d+) group\(s\) of", out, re.M)
                programs = int(budget.group(2)) if budget else 0
                if a.command == "run":
                    groups = int(re.search(r"^graph \w+: (\d+) fused group", out, re.M).group(1))
                    cold = re.search(r"first result ([0-9.]+) ms .*?(\d+) of (\d+) kernel\(s\) used: \d+ loaded from the kernel cache, "
                                     r"(\d+) compiled; ([0-9.]+) ms", out)
                    reuse = re.search(r"compiled once: (\d+) distinct kernels?", out)
                    kernels = int(reuse.group(1)) if reuse else int(budget.group(1)) if budget else groups
                    print(f"{shape:6} {n:7} {groups:7} {kernels:7} {int(cold.group(4)):8} "
                          f"{float(cold.group(5)) / 1000:9.2f} {float(cold.group(1)) / 1000:8.2f} {wall:8.2f} "
                          f"{usage.ru_maxrss / 1024:8.0f} {programs:8}" + ("" if "MISMATCH" not in out else "  MISMATCH"), flush=True)
                    continue
                groups = int(re.search(r"fusion plan for graph \w+: (\d+) group", out).group(1))
                ops = sum(int(m) for m in re.findall(r"^group \d+ \S+ \([^,()]+, (\d+) ops\)", out, re.M))
                reuse = re.search(r"compiled once: (\d+) distinct kernels?", out)
                kernels = int(reuse.group(1)) if reuse else int(budget.group(1)) if budget else groups
                phases = re.findall(r"^  (.+?)\s+([0-9.]+) s  \(", out, re.M)
                top = sorted(phases, key=lambda p: -float(p[1]))[:3]
                print(f"{shape:6} {n:7} {ops:7} {groups:7} {kernels:7} {wall:8.2f} {1000 * wall / max(ops, 1):6.2f} "
                      f"{usage.ru_maxrss / 1024:8.0f} {programs:8}  " + ", ".join(f"{name} {float(s):.1f}" for name, s in top), flush=True)

if __name__ == "__main__":
    main()
