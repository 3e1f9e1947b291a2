#!/usr/bin/env python3
"""Job-queue throughput of `tessel worker` on a PostgreSQL server, with the stub measurer.

Starts a private PostgreSQL server (initdb + pg_ctl in a temporary directory on a loopback
port, as the `postgres` user when run as root), and for each worker count (default 1, 2, 4, 8)
enqueues JOBS stub jobs of fixed cost (`tessel jobs --enqueue-stub`), starts that many
`tessel worker --stub-measure-ms MS --exit-when-idle` processes, and times them until the queue
is empty. Prints one row per worker count: wall time, jobs/s, speed-up over one worker, its
efficiency (speed-up / N; the target is >= 0.9 for N <= 8) and the median and p95 claim latency
the workers logged (target: median < 5 ms).

The stub sleeps, so N workers do not compete for cores while "measuring"; they do compete for
the server and for the claim/commit round trips, which is what this measures. On a 2-core
machine the server, the workers and the clients share the cores: real measurements (not the
stub) would interfere with each other there, and are not what this benchmark measures.

Usage: bench/queue_throughput.py [--tessel build/apps/tessel] [--jobs 2000] [--stub-ms 20]
                                 [--workers 1,2,4,8]
"""
import argparse
import os
import pwd
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def pg_bindir():
    env = os.environ.get("TESSEL_PG_BINDIR")
    if env and os.path.exists(os.path.join(env, "pg_ctl")):
        return env
    root = "/usr/lib/postgresql"
    versions = sorted((d for d in os.listdir(root) if d.isdigit()), key=int) if os.path.isdir(root) else []
    for v in reversed(versions):
        b = os.path.join(root, v, "bin")
        if os.path.exists(os.path.join(b, "pg_ctl")):
            return b
    sys.exit("PostgreSQL server binaries not found (install Debian's postgresql)")


class Server:
    def __init__(self):
        self.bindir = pg_bindir()
        self.dir = tempfile.mkdtemp(prefix="tessel-bench-pg-")
        self.as_postgres = os.geteuid() == 0
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        os.makedirs(os.path.join(self.dir, "sock"))
        data = os.path.join(self.dir, "data")
        self._chown()
        self._run([os.path.join(self.bindir, "initdb"), "-D", data, "-U", "tessel_admin", "--auth=trust", "-E", "UTF8",
                   "--no-sync", "--no-instructions"])
        with open(os.path.join(data, "postgresql.conf"), "a") as f:
            f.write(f"listen_addresses = '127.0.0.1'\nport = {self.port}\nunix_socket_directories = '{self.dir}/sock'\n"
                    "max_connections = 100\n")
        self._chown()
        self.pg_ctl("start")

    def _chown(self):
        if self.as_postgres:
            pw = pwd.getpwnam("postgres")
            for root, dirs, files in os.walk(self.dir):
                for p in [root] + [os.path.join(root, x) for x in dirs + files]:
                    os.chown(p, pw.pw_uid, pw.pw_gid)

    def _run(self, argv):
        if self.as_postgres:
            argv = ["runuser", "-u", "postgres", "--"] + argv
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)

    def pg_ctl(self, *args):
        self._run([os.path.join(self.bindir, "pg_ctl"), "-D", os.path.join(self.dir, "data"), "-l",
                   os.path.join(self.dir, "server.log"), "-w"] + list(args))

    def create_database(self, name):
        subprocess.run([os.path.join(self.bindir, "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "tessel_admin",
                        "-d", "postgres", "-q", "-c", f"CREATE DATABASE {name}"], check=True)
        return f"postgresql://tessel_admin@127.0.0.1:{self.port}/{name}"

    def stop(self):
        self.pg_ctl("stop", "-m", "fast")
        shutil.rmtree(self.dir, ignore_errors=True)


def run_once(tessel, server, n, jobs, stub_ms):
    url = server.create_database(f"bench_{n}_{int(time.time())}")
    subprocess.run([tessel, "jobs", "--db", url, "--enqueue-stub", str(jobs)], check=True, stdout=subprocess.DEVNULL)
    argv = [tessel, "worker", "--db", url, "--stub-measure-ms", str(stub_ms), "--exit-when-idle", "--poll", "0.05"]
    start = time.monotonic()
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(n)]
    logs = [p.communicate()[0] for p in procs]
    wall = time.monotonic() - start
    if any(p.returncode != 0 for p in procs):
        sys.exit("a worker failed:\n" + "\n".join(logs))
    claims = [float(m) for log in logs for m in re.findall(r"claimed in ([0-9.]+) ms", log)]
    return wall, claims


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--tessel", default=os.path.join(here, "..", "build", "apps", "tessel"))
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--stub-ms", type=float, default=20)
    ap.add_argument("--workers", default="1,2,4,8")
    a = ap.parse_args()
    counts = [int(x) for x in a.workers.split(",")]
    server = Server()
    try:
        print(f"{a.jobs} stub jobs of {a.stub_ms} ms; {os.cpu_count()} cores; server on 127.0.0.1:{server.port}")
        print(f"{'workers':>7} {'wall s':>8} {'jobs/s':>8} {'speed-up':>8} {'efficiency':>10} {'claim ms p50':>12} {'p95':>6}")
        base = None
        for n in counts:
            wall, claims = run_once(a.tessel, server, n, a.jobs, a.stub_ms)
            rate = a.jobs / wall
            base = base or rate / n
            speedup = rate / base
            p95 = sorted(claims)[int(0.95 * (len(claims) - 1))] if claims else float("nan")
            print(f"{n:>7} {wall:>8.2f} {rate:>8.1f} {speedup:>8.2f} {speedup / n:>10.2f} "
                  f"{statistics.median(claims) if claims else float('nan'):>12.2f} {p95:>6.2f}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
