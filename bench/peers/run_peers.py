"""make bench-peers: y = GELU_tanh(x @ w + bias) in float32 on the suite shapes, timed in Tessel
(the kernel `make bench` times), OpenBLAS + its epilogue, torch eager, torch.compile
(max-autotune, frozen weights), jax.jit and numpy, all in the same stretches of time.

Map: start one worker per runtime (workers.py: tessel_peer_worker for Tessel and OpenBLAS,
peer_worker.py for torch, jax, numpy) -> per shape: inputs written once and a float64
reference -> each system prepared (cold start: compile/autotune + first call) and its first
result checked -> batch sizes from one call each -> rounds, each timing every system once in
an order drawn afresh per round -> the last timed output checked again -> per-shape tables and a
summary (report.py), and the raw samples as JSON.
"""
import argparse
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import report
from workers import (DEFAULT_SYSTEMS, FALLBACK, PROBES, SYSTEMS, CommandError, Worker, WorkerError, jax_cpus, worker_argv,
                     worker_env)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOLERANCE = 1e-3  # max |y - ref| / (1 + |ref|), the rule of support/ErrorStats.h and tessel_bench's cross-check


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="make bench-peers BENCH_ARGS=...", description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="CMake build folder (tessel_peer_worker)")
    ap.add_argument("--shapes", default=os.path.join(ROOT, "bench", "shapes.txt"), help="shape suite file")
    ap.add_argument("--only", default="", help="comma-separated shape names (default: every shape)")
    ap.add_argument("--systems", default=",".join(DEFAULT_SYSTEMS), help=f"comma-separated, of {', '.join(SYSTEMS)}")
    ap.add_argument("--rounds", type=int, default=10, help="rounds; each times every system once (default 10)")
    ap.add_argument("--seconds", type=float, default=0.2, help="timed seconds per system per round (default 0.2)")
    ap.add_argument("--min-calls", type=int, default=3, help="calls per system per round at least (default 3)")
    ap.add_argument("--gap", type=float, default=0.1,
                    help="idle seconds after each batch, so the previous system's spinning thread pool has stopped")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--target", default="host", help="Halide target of Tessel's kernel only (e.g. "
                    "x86-64-linux-avx-avx2-f16c-fma-sse41 for AVX2 on an AVX-512 machine)")
    ap.add_argument("--schedule", default="cpu_blocked", help="Tessel library schedule (default cpu_blocked)")
    ap.add_argument("--prepare-timeout", type=float, default=3600, help="seconds allowed for one compile (default 3600)")
    ap.add_argument("--out", default="", help="folder for worker logs and results.json (default BUILD/bench-peers)")
    a = ap.parse_args(argv)
    a.systems = [s for s in a.systems.split(",") if s]
    unknown = [s for s in a.systems if s not in SYSTEMS]
    if unknown or a.rounds < 1 or a.threads < 1:
        ap.error(f"unknown systems {unknown}" if unknown else "--rounds and --threads must be >= 1")
    a.out = a.out or os.path.join(a.build, "bench-peers")
    return a


def load_shapes(path, only, fields=lambda w: (w[0], w[1], int(w[2]), int(w[3]), int(w[4]))):
    """The shapes of a shapes file (one per line, '#' comments), each `fields(words)`; `only`: a
    comma-separated list of names to keep (an unknown name exits with the file named)."""
    shapes = []
    for line in open(path):
        words = line.split("#")[0].split()
        if words:
            shapes.append(fields(words))
    wanted = [s for s in only.split(",") if s]
    missing = set(wanted) - {s[0] for s in shapes}
    if missing:
        sys.exit(f"run_peers: no shape {', '.join(sorted(missing))} in {path}")
    return [s for s in shapes if not wanted or s[0] in wanted]


def host_isa():
    """avx512f or avx2 (the widest of the two in lscpu's flags), else 'neither'."""
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    flags = next((l.split(":", 1)[1].split() for l in out.splitlines() if l.startswith("Flags:")), [])
    model = next((l.split(":", 1)[1].strip() for l in out.splitlines() if l.startswith("Model name:")), "?")
    return ("avx512f" if "avx512f" in flags else "avx2" if "avx2" in flags else "neither avx512f nor avx2"), model


def gelu_tanh(v):
    return 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))


def write_inputs(shape, index, folder):
    """x, w, bias uniform in [-1, 1), seeded per shape, as the files every worker reads.
    Returns the float64 reference y."""
    _, _, m, k, n = shape
    rng = np.random.default_rng(1000 + index)
    arrays = {"x": (m, k), "w": (k, n), "bias": (n,)}
    data = {}
    for name, dims in arrays.items():
        data[name] = rng.uniform(-1, 1, dims).astype(np.float32)
        data[name].tofile(os.path.join(folder, name + ".f32"))
    x, w, b = (data[s].astype(np.float64) for s in arrays)
    return gelu_tanh(x @ w + b)


def check(path, ref):
    y = np.fromfile(path, np.float32).astype(np.float64)
    if y.size != ref.size:
        return {"ok": False, "error": math.inf}
    err = np.abs(y.reshape(ref.shape) - ref) / (1 + np.abs(ref))
    worst = float(np.max(np.where(np.isfinite(err), err, np.inf)))  # a NaN or inf never passes
    return {"ok": worst <= TOLERANCE, "error": worst}


def progress(text):
    print(text, file=sys.stderr, flush=True)


class Bench:
    def __init__(self, args, workers, scratch):
        self.a, self.workers, self.scratch = args, workers, scratch

    def worker(self, system):
        return self.workers[SYSTEMS[system][0]]

    def dump_and_check(self, system, row, ref, when):
        path = os.path.join(self.scratch, f"y_{system}.f32")
        self.worker(system).ask(f"dump {system} {path}")
        c = check(path, ref)
        os.remove(path)
        c["when"] = when
        row["checks"].append(c)
        if not c["ok"]:
            row["status"] = f"FAILED check at {when} (max err {c['error']:.2e} > {TOLERANCE:g}); not reported"
            progress(f"  {system}: {row['status']}")
        return c["ok"]

    def time_groups(self, rows, system, calls):
        """After the rounds: `system`'s groups timed one by one ("groups SYSTEM N"), stored in its
        row as (name, kind, seconds, flops, bytes)."""
        row = rows.get(system, {})
        if not row.get("median"):
            return
        try:
            answer = self.worker(system).ask(f"groups {system} {calls}").split()
            row["groups"] = [(n, k, float(t), float(f), float(b)) for n, k, t, f, b in (a.split(":") for a in answer)]
        except (WorkerError, CommandError) as e:
            row["groups_status"] = str(e)

    def inputs(self, shape, index, folder):
        """Writes the shape's input files into `folder`; returns the float64 reference, the
        workers' load command and whether every call is timed after a cache flush (1 or 0)."""
        name, kind, m, k, n = shape
        return write_inputs(shape, index, folder), f"load {name} {m} {k} {n} {folder}", 1 if kind == "decode" else 0

    def run_shape(self, shape, index):
        name = shape[0]
        progress(f"{name}: writing inputs and the float64 reference")
        folder = tempfile.mkdtemp(prefix=name + "-", dir=self.scratch)
        ref, load, flush = self.inputs(shape, index, folder)
        rows = {}
        for runtime in {SYSTEMS[s][0] for s in self.a.systems}:
            try:
                self.workers[runtime].ask(load)
            except (WorkerError, CommandError) as e:
                self.workers[runtime].dead = self.workers[runtime].dead or str(e)
        shutil.rmtree(folder)

        # Cold start and first check, one system at a time (nothing else runs meanwhile).
        active, queue = [], list(self.a.systems)
        while queue:
            system = queue.pop(0)
            row = rows[system] = {"checks": [], "samples": [], "calls": []}
            progress(f"{name}: preparing {system} (compile and first call)")
            try:
                answer = self.worker(system).ask(f"prepare {system}", timeout=self.a.prepare_timeout).split()
                row["cold"] = float(answer[0])
                if system in PROBES:
                    row["flops"] = float(answer[1])  # a probe: its work per call, nothing to check
                    active.append(system)
                elif self.dump_and_check(system, row, ref, "first result"):
                    active.append(system)
            except (WorkerError, CommandError) as e:
                row["status"] = str(e)
                progress(f"  {system}: {e}")
                fallback = FALLBACK.get(system)
                if isinstance(e, CommandError) and fallback and fallback not in rows and fallback not in queue:
                    queue.insert(0, fallback)

        # Calls per round: enough for --seconds, measured by one call (flush included), at least --min-calls.
        calls = {}
        for system in list(active):
            try:
                t0 = time.perf_counter()
                self.worker(system).ask(f"time {system} 1 {flush}")
                calls[system] = max(self.a.min_calls, min(200, math.ceil(self.a.seconds / (time.perf_counter() - t0))))
            except (WorkerError, CommandError) as e:
                rows[system]["status"] = str(e)
                active.remove(system)

        for r in range(self.a.rounds):
            progress(f"{name}: round {r + 1}/{self.a.rounds}")
            order = list(active)
            random.Random(r).shuffle(order)  # drawn afresh per round: no system always follows the same one
            for system in order:
                row = rows[system]
                if row.get("status"):
                    continue
                try:
                    times = [float(t) for t in self.worker(system).ask(f"time {system} {calls[system]} {flush}").split()]
                    row["samples"].append(statistics.median(times))
                    row["calls"].extend(times)
                except (WorkerError, CommandError) as e:
                    row["status"] = str(e)
                time.sleep(self.a.gap)

        for system in active:
            row = rows[system]
            if row.get("status"):
                continue
            if system in PROBES:
                row["median"] = statistics.median(row["samples"])
                continue
            try:
                if self.dump_and_check(system, row, ref, "last timed call"):
                    row["median"] = statistics.median(row["samples"])
            except (WorkerError, CommandError) as e:
                row["status"] = str(e)
        return rows


def print_header(args, workers, isa, model, out):
    t = workers.get("tessel")
    ti = t.info if t and not t.dead else {}
    print(f"== make bench-peers: y = GELU_tanh(x @ w + bias), float32, {args.threads} threads, "
          f"medians over {args.rounds} rounds ==", file=out)
    print(f"CPU: {model}; ISA: {isa} (lscpu flags)", file=out)
    print(f"Tessel: schedule {ti.get('schedule', args.schedule)}, numeric mode fast, target {ti.get('target', args.target)}"
          + ("" if args.target == "host" else " (--target: Tessel only; the peers run at the host's ISA)"), file=out)
    if "tessel_panels" in args.systems:
        print("Tessel, w prepared (panels): the same layer with w declared a weight, prepared once in panels of the "
              "register block's width (what the layout pass chooses for M <= 16; the panel nests read them in place); "
              "preparing is part of its cold start, as freezing is of torch.compile's", file=out)
    print(f"OpenBLAS: {ti.get('openblas', '?')}", file=out)
    versions = [w.info.get("version", f"{rt}: {w.dead or 'unknown'}") for rt, w in workers.items() if rt != "tessel"]
    print("Peers: " + "; ".join(versions), file=out)
    pinned = jax_cpus(args.threads)
    print(f"Threads: Tessel/OpenBLAS worker HL_NUM_THREADS, omp_set_num_threads, openblas_set_num_threads = {args.threads}; "
          f"every worker OMP_NUM_THREADS={args.threads}; torch MKL_NUM_THREADS={args.threads}, "
          f"torch.set_num_threads({args.threads}); numpy OPENBLAS_NUM_THREADS={args.threads}; jax "
          f"XLA_FLAGS='{worker_env('jax', args.threads, '')['XLA_FLAGS']}'"
          + (f", pinned to CPUs {sorted(pinned)}" if pinned else f" (the machine has {args.threads} CPUs, XLA's pool size)")
          + "; OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE unset", file=out)
    print("Worker start-up (process start to ready, imports included): " +
          ", ".join(f"{rt} {w.startup:.1f} s" for rt, w in workers.items() if not w.dead), file=out)
    print(f"Check: each system's first result and its last timed output against float64 numpy on the same inputs;\n"
          f"  pass when max |y - ref| / (1 + |ref|) <= {TOLERANCE:g}. A failed check is printed and the row not reported.", file=out)
    print("Cold s: per shape, from the worker's 'prepare' (inputs already in its memory) to the first result:\n"
          "  Tessel: a fresh GeluLayer, JIT of every guarded variant; torch.compile: dynamo reset, trace, inductor with a\n"
          "  fresh cache folder, autotuning, weight freezing; jax.jit: a fresh jit, trace, XLA compile; others: the first call.\n"
          "Time per round: the median of a batch of calls; median ms: the median over rounds; spread: (max - min) / median\n"
          "  over rounds. Rounds alternate every system, in an order drawn afresh each round.", file=out)


def start_workers(args, scratch):
    """One worker per runtime the systems need, by runtime; a worker that cannot start is kept,
    dead, with its reason (its systems then report it)."""
    workers = {}
    for runtime in dict.fromkeys(SYSTEMS[s][0] for s in args.systems):
        progress(f"starting the {runtime} worker")
        argv_w = worker_argv(runtime, args.build, args.threads, args.target, args.schedule)
        cpus = jax_cpus(args.threads) if runtime == "jax" else None
        w = workers[runtime] = Worker(runtime, argv_w, worker_env(runtime, args.threads, scratch),
                                      os.path.join(args.out, f"{runtime}-worker.log"), cpus)
        if w.dead:
            progress(f"  {w.dead}")
    return workers


def run_all(bench, shapes, workers, scratch):
    """Every shape in turn; the workers are closed and the scratch folder removed at the end."""
    results = []
    try:
        for index, shape in enumerate(shapes):
            results.append({"shape": shape, "rows": bench.run_shape(shape, index)})
    finally:
        for w in workers.values():
            w.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return results


def main(argv):
    args = parse_args(argv)
    shapes = load_shapes(args.shapes, args.only)
    os.makedirs(args.out, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="run-", dir=args.out)
    isa, model = host_isa()
    started = time.perf_counter()
    workers = start_workers(args, scratch)
    results = run_all(Bench(args, workers, scratch), shapes, workers, scratch)
    print_header(args, workers, isa, model, sys.stdout)
    for entry in results:
        report.print_shape(entry["shape"], entry["rows"], sys.stdout)
    report.print_summary(results, sys.stdout)
    path = os.path.join(args.out, "results.json")
    with open(path, "w") as f:
        json.dump({"isa": isa, "cpu": model, "args": vars(args), "tolerance": TOLERANCE,
                   "workers": {rt: {"info": w.info, "startup_s": w.startup, "dead": w.dead} for rt, w in workers.items()},
                   "results": results}, f, indent=1)
    print(f"\nRaw samples: {path}; worker logs: {args.out}/*-worker.log; whole run {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
