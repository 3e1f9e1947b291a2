"""The Python side of `make bench-peers`: one long-lived worker per runtime (torch, jax or numpy),
started by run_peers.py, serving y = GELU_tanh(x @ w + bias) in float32 over the same line
protocol as tessel_peer_worker.cpp:

  load NAME M K N DIR   read DIR/x.f32 [M,K], DIR/w.f32 [K,N], DIR/bias.f32 [N] (row-major f32)
  prepare SYSTEM        build SYSTEM for the loaded shape and run it once:
                        "ok <seconds from the command to the first result>"
  time SYSTEM N FLUSH   N calls (each after a cache flush when FLUSH is 1): "ok t1 ... tN" seconds
  dump SYSTEM PATH      write SYSTEM's latest output [M,N] (row-major f32) to PATH
  load_attention NAME B S L D CAUSAL DIR
                        read DIR/q.f32 [B,S,D], DIR/k.f32 [B,L,D], DIR/v.f32 [B,L,D]; the attention
                        systems compute o = softmax(q k^T / sqrt(D) [causal]) v, [B,S,D]
  load_attention_train NAME B S L D CAUSAL DIR
                        as load_attention, and DIR/do.f32 [B,S,D]: the systems compute o and its
                        backward from dO, answering o, dq, dk, dv one after the other ([4,B,S,D])
  quit

Systems: torch -> torch_eager, torch_compile (mode max-autotune), torch_compile_default, and for
attention torch_sdpa (F.scaled_dot_product_attention, eager) and torch_compile_sdpa (the same
function under torch.compile); jax -> jax_jit, and jax_attention (jax.nn.dot_product_attention
under jax.jit); numpy -> numpy. The thread settings that must precede the imports (OMP, MKL,
OpenBLAS, XLA_FLAGS) come from run_peers.py's environment; this file sets torch's in-process
count. A runtime that fails to import still answers, with "error not installed: <reason>".
"""
import argparse
import os
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

import numpy as np

SQRT_2_OVER_PI = 0.7978845608028654


class CacheFlusher:
    """Touches one byte of every 64-byte line of a 256 MiB buffer from `threads` threads (numpy
    releases the GIL), as tessel_bench's CacheFlusher does, so w comes from DRAM afterwards."""

    def __init__(self, threads, nbytes=256 << 20):
        self.lines = np.ones(nbytes, np.uint8)[::64]
        self.parts = np.array_split(self.lines, threads)
        self.pool = ThreadPoolExecutor(threads)

    def flush(self):
        list(self.pool.map(lambda p: np.add(p, 1, out=p), self.parts))


def gelu_tanh_numpy(v):
    return 0.5 * v * (1 + np.tanh(SQRT_2_OVER_PI * (v + 0.044715 * v * v * v)))


# The transformer block's weights (algorithms/TransformerBlock.h), in the order of its inputs.
BLOCK_WEIGHTS = ("attn_norm", "wq", "wk", "wv", "wo", "mlp_norm", "w_gate", "w_up", "w_down")


class TorchRuntime:
    systems = ("torch_eager", "torch_compile", "torch_compile_default", "torch_sdpa", "torch_compile_sdpa",
               "torch_block", "torch_compile_block", "torch_compile_block_default")

    def __init__(self, threads):
        import torch
        import torch._inductor.config as inductor_config
        self.torch = torch
        torch.set_num_threads(threads)
        inductor_config.freezing = True  # weights are constants: folded and prepacked at compile time
        self.info = {"version": f"torch {torch.__version__} (CPU capability {torch.backends.cpu.get_cpu_capability()})"}

    def new_shape(self):
        self.torch._dynamo.reset()  # each shape compiles from scratch (the cold start is a real one)

    def build(self, system, *inputs):
        if system.endswith("_sdpa"):
            return self.build_attention(system, *inputs)
        if "_block" in system:
            return self.build_block(system, *inputs)
        return self.build_gelu(system, *inputs)

    def build_block(self, system, x, cos, sin, k_cache, v_cache, weights, heads, kv_heads):
        """The block as a module with frozen parameters; a static shape (dynamic=False). The caches
        [S, kv_heads, d] are inputs written in place (their last T positions), as a static cache."""
        torch = self.torch
        F = torch.nn.functional
        xt, ct, st = torch.from_numpy(x), torch.from_numpy(cos), torch.from_numpy(sin)
        kc, vc = torch.from_numpy(k_cache.copy()), torch.from_numpy(v_cache.copy())
        t, positions = x.shape[0], k_cache.shape[0]
        past = positions - t
        # Queries are the last T positions: key j is visible to query i when j <= past + i.
        mask = torch.from_numpy(np.arange(positions)[None, :] <= past + np.arange(t)[:, None]) if past and t > 1 else None

        class Block(torch.nn.Module):
            def __init__(self):
                super().__init__()
                for name in BLOCK_WEIGHTS:
                    setattr(self, name, torch.nn.Parameter(torch.from_numpy(weights[name]), requires_grad=False))

            def forward(self, v, c, s, k_all, v_all):
                d = c.shape[1]

                def norm(u, g):
                    return u * torch.rsqrt((u * u).mean(dim=1, keepdim=True) + 1e-5) * g

                def rotary(u):
                    rot = torch.cat((-u[..., d // 2:], u[..., :d // 2]), dim=-1)
                    return u * c[:, None, :] + rot * s[:, None, :]

                h = norm(v, self.attn_norm)
                q = rotary((h @ self.wq).view(t, heads, d)).transpose(0, 1)
                k_all[past:] = rotary((h @ self.wk).view(t, kv_heads, d))
                v_all[past:] = (h @ self.wv).view(t, kv_heads, d)
                keys, values = k_all.transpose(0, 1)[None], v_all.transpose(0, 1)[None]
                o = F.scaled_dot_product_attention(q[None], keys, values, attn_mask=mask, is_causal=past == 0,
                                                   enable_gqa=True)[0]
                x1 = v + o.transpose(0, 1).reshape(t, heads * d) @ self.wo
                h2 = norm(x1, self.mlp_norm)
                return x1 + (F.silu(h2 @ self.w_gate) * (h2 @ self.w_up)) @ self.w_down

        block = Block().eval()
        if system == "torch_block":
            return lambda: block(xt, ct, st, kc, vc)
        mode = "max-autotune" if system == "torch_compile_block" else "default"
        compiled = torch.compile(block, mode=mode, dynamic=False)
        return lambda: compiled(xt, ct, st, kc, vc)

    def build_attention(self, system, q, k, v, causal, d_out=None):
        torch = self.torch
        F = torch.nn.functional
        qt, kt, vt = torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v)
        fn = lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=causal)
        if system == "torch_compile_sdpa":
            fn = torch.compile(fn, dynamic=False)
        if d_out is None:
            return lambda: fn(qt, kt, vt)
        # Training: the forward, then autograd's backward from dO (compiled too under torch.compile).
        for t in (qt, kt, vt):
            t.requires_grad_(True)
        dot = torch.from_numpy(d_out)

        def train():
            with torch.enable_grad():
                o = fn(qt, kt, vt)
                grads = torch.autograd.grad(o, (qt, kt, vt), dot)
            return torch.cat([t.detach().reshape(-1) for t in (o, *grads)])
        return train

    def build_gelu(self, system, x, w, b):
        torch = self.torch
        F = torch.nn.functional
        xt, wt, bt = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b)
        if system == "torch_eager":
            return lambda: F.gelu(xt @ wt + bt, approximate="tanh")

        class GeluLayer(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = torch.nn.Parameter(wt, requires_grad=False)
                self.b = torch.nn.Parameter(bt, requires_grad=False)

            def forward(self, v):
                return F.gelu(v @ self.w + self.b, approximate="tanh")

        mode = "max-autotune" if system == "torch_compile" else "default"
        compiled = torch.compile(GeluLayer().eval(), mode=mode, dynamic=False)
        return lambda: compiled(xt)

    def call(self, fn):
        with self.torch.no_grad():
            return fn()

    def to_numpy(self, y):
        return y.numpy()


class JaxRuntime:
    systems = ("jax_jit", "jax_attention", "jax_block")

    def __init__(self, threads):
        import jax
        self.jax = jax
        self.info = {"version": f"jax {jax.__version__}, jaxlib {__import__('jaxlib').__version__}, "
                                f"devices {[str(d) for d in jax.devices()]}"}

    def new_shape(self):
        pass

    def build(self, system, *inputs):
        jax = self.jax
        if system == "jax_block":
            return self.build_block(*inputs)
        if system == "jax_attention":
            q, k, v, causal = inputs[:4]
            # [B, T, D] as [B, T, 1 head, D], the layout dot_product_attention takes.
            attention = lambda a, b, c: jax.nn.dot_product_attention(a, b, c, is_causal=causal)
            qj, kj, vj = (jax.device_put(t[:, :, None, :]) for t in (q, k, v))
            if len(inputs) == 4:
                fn = jax.jit(attention)
                return lambda: fn(qj, kj, vj).block_until_ready()

            def train(a, b, c, g):  # the forward and its vector-Jacobian product from dO, one jit
                o, pullback = jax.vjp(attention, a, b, c)
                return jax.numpy.concatenate([t.reshape(-1) for t in (o, *pullback(g))])
            fn = jax.jit(train)
            gj = jax.device_put(inputs[4][:, :, None, :])
            return lambda: fn(qj, kj, vj, gj).block_until_ready()
        x, w, b = inputs
        fn = jax.jit(lambda v, wv, bv: jax.nn.gelu(v @ wv + bv, approximate=True))  # a fresh jit per shape
        xj, wj, bj = jax.device_put(x), jax.device_put(w), jax.device_put(b)
        return lambda: fn(xj, wj, bj).block_until_ready()

    def build_block(self, x, cos, sin, k_cache, v_cache, weights, heads, kv_heads):
        """The block jitted with the caches donated: each call writes the new positions into the
        caches it is given and returns them, fed to the next call."""
        jax = self.jax
        jnp = jax.numpy
        t, positions = x.shape[0], k_cache.shape[0]
        past = positions - t
        mask = None
        if past and t > 1:
            mask = jnp.asarray(np.arange(positions)[None, :] <= past + np.arange(t)[:, None])[None, None]

        def block(v, c, s, k_all, v_all, w):
            d = c.shape[1]

            def norm(u, g):
                return u * jax.lax.rsqrt((u * u).mean(axis=1, keepdims=True) + 1e-5) * g

            def rotary(u):
                rot = jnp.concatenate((-u[..., d // 2:], u[..., :d // 2]), axis=-1)
                return u * c[:, None, :] + rot * s[:, None, :]

            h = norm(v, w["attn_norm"])
            q = rotary((h @ w["wq"]).reshape(t, heads, d))
            k_all = jax.lax.dynamic_update_slice(k_all, rotary((h @ w["wk"]).reshape(t, kv_heads, d)), (past, 0, 0))
            v_all = jax.lax.dynamic_update_slice(v_all, (h @ w["wv"]).reshape(t, kv_heads, d), (past, 0, 0))
            o = jax.nn.dot_product_attention(q[None], k_all[None], v_all[None], mask=mask, is_causal=past == 0)[0]
            x1 = v + o.reshape(t, heads * d) @ w["wo"]
            h2 = norm(x1, w["mlp_norm"])
            return x1 + (jax.nn.silu(h2 @ w["w_gate"]) * (h2 @ w["w_up"])) @ w["w_down"], k_all, v_all

        fn = jax.jit(block, donate_argnums=(3, 4))
        args = (jax.device_put(x), jax.device_put(cos), jax.device_put(sin))
        wj = {k: jax.device_put(v) for k, v in weights.items()}
        caches = [jax.device_put(k_cache), jax.device_put(v_cache)]

        def call():
            y, caches[0], caches[1] = fn(*args, caches[0], caches[1], wj)
            return y.block_until_ready()
        return call

    def call(self, fn):
        return fn()

    def to_numpy(self, y):
        return np.asarray(y)


class NumpyRuntime:
    systems = ("numpy",)

    def __init__(self, threads):
        self.info = {"version": f"numpy {np.__version__}"}

    def new_shape(self):
        pass

    def build(self, system, x, w, b):
        def run():
            v = x @ w
            v += b
            return gelu_tanh_numpy(v)
        return run

    def call(self, fn):
        return fn()

    def to_numpy(self, y):
        return y


RUNTIMES = {"torch": TorchRuntime, "jax": JaxRuntime, "numpy": NumpyRuntime}


class Worker:
    def __init__(self, runtime, threads):
        self.runtime, self.threads = runtime, threads
        self.flusher = None
        self.inputs = None
        self.calls, self.outputs = {}, {}

    def load(self, name, m, k, n, folder):
        m, k, n = int(m), int(k), int(n)
        self.calls, self.outputs, self.inputs = {}, {}, None
        read = lambda what, shape: np.fromfile(os.path.join(folder, what + ".f32"), np.float32).reshape(shape)
        self.inputs = (read("x", (m, k)), read("w", (k, n)), read("bias", (n,)))
        self.runtime.new_shape()
        return name

    def load_attention(self, name, b, s, l, d, causal, folder, train=False):
        b, s, l, d = int(b), int(s), int(l), int(d)
        self.calls, self.outputs, self.inputs = {}, {}, None
        read = lambda what, shape: np.fromfile(os.path.join(folder, what + ".f32"), np.float32).reshape(shape)
        self.inputs = (read("q", (b, s, d)), read("k", (b, l, d)), read("v", (b, l, d)), int(causal) != 0)
        if train:
            self.inputs += (read("do", (b, s, d)),)
        self.runtime.new_shape()
        return name

    def load_attention_train(self, *args):
        return self.load_attention(*args, train=True)

    def load_block(self, name, t, past, hidden, heads, kv_heads, head_dim, ffn, folder):
        t, past, hidden, heads, kv_heads, head_dim, ffn = (int(a) for a in (t, past, hidden, heads, kv_heads, head_dim, ffn))
        self.calls, self.outputs, self.inputs = {}, {}, None
        read = lambda what, shape: np.fromfile(os.path.join(folder, what + ".f32"), np.float32).reshape(shape)
        shapes = {"attn_norm": (hidden,), "wq": (hidden, heads * head_dim), "wk": (hidden, kv_heads * head_dim),
                  "wv": (hidden, kv_heads * head_dim), "wo": (heads * head_dim, hidden), "mlp_norm": (hidden,),
                  "w_gate": (hidden, ffn), "w_up": (hidden, ffn), "w_down": (ffn, hidden)}
        weights = {k: read(k, s) for k, s in shapes.items()}
        cache = (past + t, kv_heads, head_dim)
        self.inputs = (read("x", (t, hidden)), read("cos", (t, head_dim)), read("sin", (t, head_dim)),
                       read("k_cache", cache), read("v_cache", cache), weights, heads, kv_heads)
        self.runtime.new_shape()
        return name

    def prepare(self, system):
        if system not in self.runtime.systems:
            raise ValueError(f"unknown system {system} (this worker: {', '.join(self.runtime.systems)})")
        if self.inputs is None:
            raise ValueError("no shape loaded")
        t0 = time.perf_counter()
        fn = self.runtime.build(system, *self.inputs)
        self.outputs[system] = self.runtime.call(fn)
        cold = time.perf_counter() - t0
        self.calls[system] = fn
        return f"{cold:.6f}"

    def time(self, system, n, flush):
        fn = self.calls.get(system)
        if fn is None:
            raise ValueError(f"{system} is not prepared")
        if int(flush) and self.flusher is None:
            self.flusher = CacheFlusher(self.threads)
        times = []
        for _ in range(int(n)):
            if int(flush):
                self.flusher.flush()
            t0 = time.perf_counter()
            y = self.runtime.call(fn)
            times.append(time.perf_counter() - t0)
        self.outputs[system] = y
        return " ".join(f"{t:.9f}" for t in times)

    def dump(self, system, path):
        y = self.outputs.get(system)
        if y is None:
            raise ValueError(f"{system} has no output")
        np.ascontiguousarray(self.runtime.to_numpy(y), dtype=np.float32).tofile(path)
        return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runtime", choices=sorted(RUNTIMES), required=True)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    t0 = time.perf_counter()
    try:
        runtime = RUNTIMES[args.runtime](args.threads)
        unavailable = None
    except Exception as e:  # an import or set-up failure: report it on every command
        traceback.print_exc()
        runtime, unavailable = None, f"not installed: {type(e).__name__}: {e}".replace("\n", " ")
    print(f"info import_seconds: {time.perf_counter() - t0:.3f}")
    for key, value in ({} if runtime is None else runtime.info).items():
        print(f"info {key}: {value}")
    print("ready", flush=True)
    worker = Worker(runtime, args.threads) if runtime else None
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "quit":
            break
        if worker is None:
            print("error " + unavailable, flush=True)
            continue
        try:
            handler = {"load": worker.load, "load_attention": worker.load_attention, "load_attention_train": worker.load_attention_train, "load_block": worker.load_block, "prepare": worker.prepare, "time": worker.time, "dump": worker.dump}.get(words[0])
            if handler is None:
                raise ValueError(f"unknown command '{words[0]}'")
            answer = "ok " + handler(*words[1:])
        except Exception as e:
            traceback.print_exc()
            answer = "error " + f"{type(e).__name__}: {e}".replace("\n", " ")[:2000]
        print(answer, flush=True)


if __name__ == "__main__":
    main()
