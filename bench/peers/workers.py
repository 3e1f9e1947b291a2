"""Worker processes of `make bench-peers`: which system each runtime serves, the environment each
is started with (threads, OpenBLAS overrides removed), and a small client for the line protocol
of tessel_peer_worker.cpp and peer_worker.py ("ok ..." / "error ..." answers, one per command).
"""
import os
import queue
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# system -> (runtime, label); the order is the tables' order.
SYSTEMS = {
    "tessel": ("tessel", "Tessel"),
    "tessel_panels": ("tessel", "Tessel, w prepared (panels)"),
    "openblas": ("tessel", "OpenBLAS+epilogue"),
    "torch_eager": ("torch", "torch eager"),
    "torch_compile": ("torch", "torch.compile max-autotune"),
    "torch_compile_default": ("torch", "torch.compile default"),
    "jax_jit": ("jax", "jax.jit"),
    "numpy": ("numpy", "numpy"),
    # Attention (bench/peers/attention_peers.py).
    "tessel_attention": ("tessel", "Tessel fused attention"),
    "tessel_attention_train": ("tessel", "Tessel attention fwd+bwd"),
    "torch_sdpa": ("torch", "torch SDPA (eager)"),
    "torch_compile_sdpa": ("torch", "torch.compile(SDPA)"),
    "jax_attention": ("jax", "jax.nn.dot_product_attention (jit)"),
    "fma_probe": ("tessel", "FMA-peak probe"),
    "read_probe": ("tessel", "read-floor probe"),
    # The transformer block (bench/peers/block_peers.py).
    "tessel_block": ("tessel", "Tessel block"),
    "torch_block": ("torch", "torch eager"),
    "torch_compile_block": ("torch", "torch.compile max-autotune"),
    "torch_compile_block_default": ("torch", "torch.compile default"),
    "jax_block": ("jax", "jax.jit"),
}
# Machine probes timed like systems (each round's peak beside the kernels); never checked or a peer.
PROBES = ("fma_probe", "read_probe")
# Timed unless --systems says otherwise; torch.compile's default mode is timed when max-autotune fails.
DEFAULT_SYSTEMS = ["tessel", "tessel_panels", "openblas", "torch_eager", "torch_compile", "jax_jit", "numpy"]
# Tessel's own rows: never a peer.
OWN = ("tessel", "tessel_panels", "tessel_attention", "tessel_attention_train", "tessel_block") + PROBES
FALLBACK = {"torch_compile": "torch_compile_default", "torch_compile_block": "torch_compile_block_default"}
OPENBLAS_OPENMP = "/usr/lib/x86_64-linux-gnu/openblas-openmp"


class WorkerError(RuntimeError):
    """The worker is gone (exited, timed out) or never started: every later command fails."""


class CommandError(RuntimeError):
    """The worker answered "error <message>" to one command and is still usable."""


def worker_env(runtime, threads, scratch):
    """The environment of one worker: the caller's, less OpenBLAS's core-type and L2-size
    overrides (as bench/run.sh), with every thread-count knob the runtime reads set to `threads`."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    env["OMP_NUM_THREADS"] = str(threads)
    if runtime == "tessel":
        # OpenBLAS's OpenMP build, as bench/run.sh selects it (one pool with the OpenMP epilogue).
        if os.path.exists(os.path.join(OPENBLAS_OPENMP, "libopenblas.so.0")):
            env["LD_LIBRARY_PATH"] = OPENBLAS_OPENMP + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    elif runtime == "torch":
        env["MKL_NUM_THREADS"] = str(threads)
        env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(scratch, "inductor-cache")  # fresh: cold is cold
        env["CUDA_VISIBLE_DEVICES"] = ""  # the PyPI wheel is a CUDA build; keep it on the CPU
    elif runtime == "jax":
        env["JAX_PLATFORMS"] = "cpu"
        env["XLA_FLAGS"] = f"--xla_cpu_multi_thread_eigen=true intra_op_parallelism_threads={threads}"
    elif runtime == "numpy":
        env["OPENBLAS_NUM_THREADS"] = str(threads)
        env["MKL_NUM_THREADS"] = str(threads)
    return env


def jax_cpus(threads):
    """XLA's CPU client sizes its pool by the CPUs the process may use, and no flag caps it
    reliably: when more than `threads` CPUs are allowed, the jax worker is pinned to the first
    `threads` of them. Returns that CPU set, or None when no pinning is needed."""
    allowed = sorted(os.sched_getaffinity(0))
    return set(allowed[:threads]) if len(allowed) > threads else None


def worker_argv(runtime, build, threads, target, schedule):
    if runtime == "tessel":
        return [os.path.join(build, "bench", "peers", "tessel_peer_worker"), "--threads", str(threads),
                "--target", target, "--schedule", schedule]
    return [sys.executable, os.path.join(HERE, "peer_worker.py"), "--runtime", runtime, "--threads", str(threads)]


class Worker:
    """One worker process. `startup` is the wall time from process start to its "ready" line
    (imports and library loading included); `info` holds its "info key: value" lines. A worker
    that cannot start is kept, with the reason in `dead`: every command to it raises WorkerError."""

    def __init__(self, runtime, argv, env, log_path, cpus=None, timeout=600):
        self.runtime, self.log_path, self.dead = runtime, log_path, None
        self.info, self.startup, self.proc = {}, None, None
        self._lines = queue.Queue()
        self._log = open(log_path, "w")
        t0 = time.perf_counter()
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True,
                                         env=env, bufsize=1,
                                         preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
            threading.Thread(target=self._read, daemon=True).start()
            while (line := self._next(timeout)) != "ready":
                if line.startswith("info "):
                    key, _, value = line[5:].partition(": ")
                    self.info[key] = value
            self.startup = time.perf_counter() - t0
        except OSError as e:
            self.dead = f"cannot start {argv[0]}: {e}"
        except WorkerError:
            pass  # _next recorded why

    def _read(self):
        for line in self.proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def _next(self, timeout):
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self.close()
            self.dead = f"{self.runtime} worker gave no answer in {timeout:.0f} s (killed; log {self.log_path})"
            raise WorkerError(self.dead)
        if line is None:
            rc = self.proc.wait()
            self.dead = f"{self.runtime} worker exited with status {rc} (log {self.log_path})"
            raise WorkerError(self.dead)
        return line

    def ask(self, command, timeout=600):
        """Sends one command; returns the text after "ok"; raises CommandError or WorkerError."""
        if self.dead:
            raise WorkerError(self.dead)
        try:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        except OSError as e:
            self.dead = f"{self.runtime} worker: {e} (log {self.log_path})"
            raise WorkerError(self.dead)
        line = self._next(timeout)
        if line == "ok" or line.startswith("ok "):
            return line[3:]
        raise CommandError(line[6:] if line.startswith("error ") else f"unexpected answer: {line!r}")

    def close(self):
        if self._log.closed:
            return
        if self.proc and self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self._log.close()
