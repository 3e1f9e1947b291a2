#!/usr/bin/env python3
"""Real tuning through the job queue on a private PostgreSQL server (bench/queue_throughput.py's
Server), measured by 1 and then 2 `tessel worker` processes (real isolated measuring children, not
the stub), each on a fresh database. Two kinds of jobs:

- `tessel tune GRAPH --shapes ... --enqueue` (the default): prints the wall time of each run and
  how the two runs' results agree: per key, whether the same schedule won and the ratio of the
  winners' measured medians.
- `--lib-profile FILE`: `tessel lib GRAPH --profile FILE --enqueue` (every group's variant costs on
  every profiled shape), then `tessel lib --profile FILE` builds the library from the server's
  costs. Prints the wall times, and whether the two runs' libraries keep the same variants.

On a 2-core machine two workers measure at the same time and disturb each other (each measuring
child uses the cores its kernel's threads ask for): the 2-worker wall time shows the queue's
overhead and the workers' overlap, not what two separate hosts would give.

Usage: bench/fleet_tuning_real.py [--tessel build/apps/tessel] [--graph algorithms/gelu_mlp.tsl]
                                  [--shapes 1x1024x4096,...] [--budget 3] [--lib-profile FILE]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from queue_throughput import Server  # noqa: E402


def run_workers(tessel, url, workers):
    """Wall seconds from the workers' start until the last one exits (the queue is empty)."""
    start = time.monotonic()
    procs = [subprocess.Popen([tessel, "worker", "--db", url, "--exit-when-idle", "--poll", "0.2"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for _ in range(workers)]
    logs = [p.communicate()[0] for p in procs]
    wall = time.monotonic() - start
    if any(p.returncode != 0 for p in procs):
        sys.exit("a worker failed:\n" + "\n".join(logs))
    return wall


def run(tessel, server, graph, shapes, budget, workers, tag):
    url = server.create_database(f"real_{tag}_{int(time.time())}")
    subprocess.run([tessel, "tune", graph, "--shapes", shapes, "--budget", str(budget), "--db", url, "--enqueue"],
                   check=True, stdout=subprocess.DEVNULL)
    wall = run_workers(tessel, url, workers)
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([tessel, "db", "export", "--db", url, f.name], check=True, stdout=subprocess.DEVNULL)
        records = json.load(open(f.name))["records"]
    best = {}
    for r in records:
        if r.get("measured_by") != "measured":
            continue
        k = json.dumps(r["key"], sort_keys=True)
        if k not in best or r["median_ms"] < best[k]["median_ms"]:
            best[k] = r
    return wall, best


def run_lib(tessel, server, graph, profile, workers, tag):
    """Enqueues the profile's variant costs, lets `workers` measure them, builds the library from
    the server's costs. Returns (workers' wall s, the library build's report, its wall s)."""
    url = server.create_database(f"lib_{tag}_{int(time.time())}")
    subprocess.run([tessel, "lib", graph, "--profile", profile, "--db", url, "--enqueue"], check=True,
                   stdout=subprocess.DEVNULL)
    wall = run_workers(tessel, url, workers)
    with tempfile.TemporaryDirectory() as out:
        start = time.monotonic()
        report = subprocess.run([tessel, "lib", graph, "--profile", profile, "--db", url, "-o", out], check=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
        build = time.monotonic() - start
    return wall, report, build


def kept_variants(report):
    """The library report's lines naming what the planner kept and where each shape goes."""
    return [l.strip() for l in report.splitlines() if re.search(r"candidate\(s\) kept| -> |^dispatch at", l.strip())]


def variant_costs(report):
    """{(variant, shape): ms} from the report's measured-cost lines."""
    costs = {}
    for line in report.splitlines():
        m = re.match(r"\s*(\S+(?: fallback)?) \[.*?\]: compile [^;]*;(.*)", line)
        if m:
            for shape, ms in re.findall(r"\s*([^;:]+): ([0-9.e+-]+) ms;", m.group(2)):
                costs[(m.group(1), shape.strip())] = float(ms)
    return costs


def main_lib(a):
    server = Server()
    try:
        runs = {n: run_lib(a.tessel, server, a.graph, a.lib_profile, n, f"w{n}") for n in (1, 2)}
        shapes = sum(1 for l in open(a.lib_profile) if l.strip() and not l.lstrip().startswith("#"))
        print(f"graph {os.path.basename(a.graph)}, profile {os.path.basename(a.lib_profile)} ({shapes} shapes); "
              f"{os.cpu_count()} cores")
        for n, (wall, report, build) in runs.items():
            print(f"{n} worker(s): variant costs measured in {wall:.1f} s; library built from them in {build:.1f} s")
        w1, w2 = runs[1][0], runs[2][0]
        print(f"speed-up {w1 / w2:.2f}x")
        k1, k2 = kept_variants(runs[1][1]), kept_variants(runs[2][1])
        print(f"kept variants and dispatch agree: {'yes' if k1 == k2 else 'no'}")
        c1, c2 = variant_costs(runs[1][1]), variant_costs(runs[2][1])
        ratios = [c2[k] / c1[k] for k in c1 if k in c2 and c1[k] > 0]
        if ratios:
            print(f"variant costs (variant x shape, {len(ratios)}), 2-worker run / 1-worker run: median "
                  f"{statistics.median(ratios):.3f}, min {min(ratios):.3f}, max {max(ratios):.3f}")
        for n in (1, 2):
            print(f"--- library report, {n} worker(s):")
            print(runs[n][1].rstrip())
    finally:
        server.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--tessel", default=os.path.join(here, "..", "build", "apps", "tessel"))
    ap.add_argument("--graph", default=os.path.join(here, "..", "algorithms", "gelu_mlp.tsl"))
    ap.add_argument("--shapes", default="1x1024x4096,16x1024x4096,64x1024x4096,256x1024x4096")
    ap.add_argument("--budget", type=int, default=3)
    ap.add_argument("--lib-profile", help="measure `tessel lib --profile FILE` through the queue instead of tune")
    a = ap.parse_args()
    if a.lib_profile:
        return main_lib(a)
    server = Server()
    try:
        w1, b1 = run(a.tessel, server, a.graph, a.shapes, a.budget, 1, "one")
        w2, b2 = run(a.tessel, server, a.graph, a.shapes, a.budget, 2, "two")
        print(f"graph {os.path.basename(a.graph)}, shapes {a.shapes}, budget {a.budget}; {os.cpu_count()} cores")
        print(f"1 worker: {w1:.1f} s, {len(b1)} keys measured; 2 workers: {w2:.1f} s, {len(b2)} keys; speed-up {w1 / w2:.2f}x")
        same = [k for k in b1 if k in b2 and b1[k]["schedule"] == b2[k]["schedule"]]
        ratios = [b2[k]["median_ms"] / b1[k]["median_ms"] for k in b1 if k in b2]
        print(f"keys in both: {len(ratios)}; same winning schedule: {len(same)}")
        if ratios:
            print(f"winners' medians, 2-worker run / 1-worker run: median {statistics.median(ratios):.3f}, "
                  f"min {min(ratios):.3f}, max {max(ratios):.3f}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
