#!/usr/bin/env python3
"""Real tuning through the job queue: `tessel tune GRAPH --shapes ... --enqueue` on a private
PostgreSQL server (bench/queue_throughput.py's Server), measured by 1 and then 2 `tessel worker`
processes (real isolated measuring children, not the stub), each on a fresh database. Prints the
wall time of each and how the two runs' results agree: per key, whether the same schedule won
and the ratio of the winners' measured medians.

On a 2-core machine two workers measure at the same time and disturb each other (each measuring
child uses the cores its kernel's threads ask for): the 2-worker wall time shows the queue's
overhead and the workers' overlap, not what two separate hosts would give.

Usage: bench/fleet_tuning_real.py [--tessel build/apps/tessel] [--graph algorithms/gelu_mlp.tsl]
                                  [--shapes 1x1024x4096,...] [--budget 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from queue_throughput import Server  # noqa: E402


def run(tessel, server, graph, shapes, budget, workers, tag):
    url = server.create_database(f"real_{tag}_{int(time.time())}")
    subprocess.run([tessel, "tune", graph, "--shapes", shapes, "--budget", str(budget), "--db", url, "--enqueue"],
                   check=True, stdout=subprocess.DEVNULL)
    start = time.monotonic()
    procs = [subprocess.Popen([tessel, "worker", "--db", url, "--exit-when-idle", "--poll", "0.2"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for _ in range(workers)]
    logs = [p.communicate()[0] for p in procs]
    wall = time.monotonic() - start
    if any(p.returncode != 0 for p in procs):
        sys.exit("a worker failed:\n" + "\n".join(logs))
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--tessel", default=os.path.join(here, "..", "build", "apps", "tessel"))
    ap.add_argument("--graph", default=os.path.join(here, "..", "algorithms", "gelu_mlp.tsl"))
    ap.add_argument("--shapes", default="1x1024x4096,16x1024x4096,64x1024x4096,256x1024x4096")
    ap.add_argument("--budget", type=int, default=3)
    a = ap.parse_args()
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
