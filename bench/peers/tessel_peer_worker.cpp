// tessel_peer_worker: the C++ side of `make bench-peers` (bench/peers/run_peers.py drives it).
// A long-lived process that serves two systems over a line protocol on stdin/stdout, so the
// driver can alternate them with the Python peers in the same stretches of time:
//   tessel    the running example's layer through driver/GeluLayer.h -> CompiledKernel, GELU
//             tanh, numeric mode fast, a library schedule (default cpu_blocked) compiled for
//             --target: the kernel `make bench` (tessel_bench) times;
//   tessel_panels  the same layer with w declared a weight and prepared once in panels of the
//             register block's width (bench/GroupVariants.h "w_panels", what the layout pass
//             chooses for small M); preparing is part of its cold start, as freezing is of
//             torch.compile's;
//   openblas  sgemm (sgemv for M = 1) + the vectorized bias+GELU pass of baselines/OpenBlasGelu.cpp;
//   tessel_attention  scaled dot-product attention (driver/AttentionLayer.h): the fused attention
//             group `tessel compile` plans for algorithms/Attention.h's graph, in fast mode;
//   tessel_attention_train  attention's forward and backward (bench/peers/AttentionTrainSystem.h):
//             plan() and CompiledGraph for algorithms/Attention.h's attention_train_graph, fast mode;
//   tessel_block  the transformer block over a KV cache (bench/peers/BlockSystem.h): plan() and
//             CompiledGraph at the loaded sizes, weights prepared in the cold start;
//   fma_probe the FMA-peak probe (autoscheduler/MachineProbes.h) at the target's ISA, timed like a
//             system so each round has the machine's peak beside the kernels ("dump" writes nothing);
//   read_probe one read of 256 MiB in stream_read's fastest pattern: the read floor per round.
//
// Protocol: one command per line; each answer is one line, "ok ..." or "error <message>".
//   load NAME M K N DIR   read DIR/x.f32 [M,K], DIR/w.f32 [K,N], DIR/bias.f32 [N] (row-major
//                         float32) and drop the previous shape's buffers and kernels
//   load_attention NAME B S L D CAUSAL DIR   read DIR/q.f32 [B,S,D], DIR/k.f32 [B,L,D],
//                         DIR/v.f32 [B,L,D]; the output is o [B,S,D] (CAUSAL: 0 or 1)
//   load_attention_train NAME B S L D CAUSAL DIR   as load_attention, and DIR/do.f32 [B,S,D]; the
//                         output is o, dq, dk, dv, one after the other ([4,B,S,D]; S == L)
//   load_block NAME T PAST HIDDEN HEADS KV_HEADS HEAD_DIM FFN DIR   read DIR/<input>.f32 for x [T,HIDDEN],
//                         cos and sin [T,HEAD_DIM], k_cache and v_cache [PAST+T,KV_HEADS,HEAD_DIM] and
//                         every weight of algorithms/TransformerBlock.h; the output is y [T,HIDDEN]
//   prepare SYSTEM        build SYSTEM for the loaded shape (tessel: a fresh GeluLayer, JIT, every
//                         guarded variant) and run it once: "ok <seconds from command to first result>"
//   time SYSTEM N FLUSH   N calls, each after a cache flush of every core when FLUSH is 1 (outside
//                         the timed call, as tessel_bench's decode shapes): "ok t1 ... tN" in seconds
//   groups tessel_block N N calls timed group by group: "ok name:kind:seconds:flops:bytes ..." per group
//                         (tessel_attention_train likewise, flops and bytes 0)
//   dump SYSTEM PATH      write SYSTEM's latest output y [M,N] (row-major float32) to PATH
//   quit
// Before the first command it prints "info <key>: <value>" lines, then "ready".
#include "autoscheduler/MachineProbes.h"
#include "baselines/GeluReference.h"
#include "bench/GroupVariants.h"
#include "bench/peers/AttentionTrainSystem.h"
#include "bench/peers/BlockSystem.h"
#include "codegen/Compile.h"
#include "driver/AttentionLayer.h"
#include "driver/GeluLayer.h"
#include "schedules/Library.h"
#include "support/Clock.h"
#include "support/Interleaved.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

extern "C" void openblas_set_num_threads(int);
extern "C" int openblas_get_parallel(void);

namespace tessel::bench {
namespace {

using Halide::Runtime::Buffer;

struct Options {
    int threads = 2;
    std::string schedule = "cpu_blocked";
    std::string target = "host";
};

Options parse_options(int argc, char **argv) {
    Options o;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
            return argv[++i];
        };
        if (a == "--threads")
            o.threads = std::stoi(value());
        else if (a == "--schedule")
            o.schedule = value();
        else if (a == "--target")
            o.target = value();
        else
            throw std::invalid_argument("unknown argument " + a +
                                        " (usage: tessel_peer_worker [--threads N] [--schedule NAME] [--target T])");
    }
    if (o.threads < 1) throw std::invalid_argument("--threads must be >= 1");
    return o;
}

/** Reads exactly count floats from path into data. */
void read_floats(const std::string &path, float *data, size_t count) {
    std::ifstream in(path, std::ios::binary);
    if (!in.read(reinterpret_cast<char *>(data), (std::streamsize)(count * sizeof(float))))
        throw std::runtime_error("cannot read " + std::to_string(count) + " floats from " + path);
}

/** One shape's inputs, and per system its callable and its own output buffer. */
struct Shape {
    std::string name;
    int M = 0, K = 0, N = 0;
    Buffer<float> x, w, bias;  // Buffer(K, M) is row-major [M, K]
    std::unique_ptr<GeluLayer> layer;
    std::unique_ptr<GroupVariant> panels;  ///< tessel_panels
    GroupVariant::Prepared prepared;       ///< its weights, prepared once
    std::map<std::string, Buffer<float> *> panel_buffers;
    AttentionShape attention{.batch = 0};  ///< load_attention: its sizes (batch 0: a GELU shape)
    Buffer<float> q, k, v;
    std::unique_ptr<AttentionLayer> attention_layer;
    std::unique_ptr<AttentionTrainSystem> train;  ///< load_attention_train
    std::unique_ptr<BlockSystem> block;           ///< load_block
    std::map<std::string, Buffer<float>> y;
    std::map<std::string, std::function<void()>> call;
};

class Worker {
public:
    explicit Worker(const Options &o)
        : o_(o), target_(parse_target(o.target)), schedule_(sched::resolve_schedule(o.schedule, target_)) {}

    /** Runs one command line; returns the answer without "ok " / "error ". */
    std::string handle(const std::string &line) {
        std::istringstream in(line);
        std::string cmd;
        in >> cmd;
        if (cmd == "load") return load(in);
        if (cmd == "load_attention") return load_attention(in);
        if (cmd == "load_attention_train") return load_attention(in, true);
        if (cmd == "load_block") return load_block(in);
        if (cmd == "prepare") return prepare(word(in));
        if (cmd == "time") {
            const std::string system = word(in);
            int n = 0, flush = 0;
            if (!(in >> n >> flush) || n < 1) throw std::invalid_argument("usage: time SYSTEM N FLUSH");
            return time(system, n, flush != 0);
        }
        if (cmd == "groups") {
            const std::string system = word(in);
            int n = 0;
            const bool train = system == "tessel_attention_train" && shape().train;
            if (!(in >> n) || n < 1 || !((system == "tessel_block" && shape().block) || train))
                throw std::invalid_argument("usage: groups tessel_block|tessel_attention_train N (after prepare)");
            std::vector<BlockSystem::GroupTime> times;
            if (train)
                for (const auto &t : shape().train->group_times(n)) times.push_back({t.name, t.kind, t.seconds, 0, 0});
            else
                times = shape().block->group_times(n);
            std::string answer;
            for (const auto &t : times) {
                char buf[256];
                std::snprintf(buf, sizeof buf, "%s%s:%s:%.9f:%.0f:%.0f", answer.empty() ? "" : " ", t.name.c_str(),
                              t.kind.c_str(), t.seconds, t.flops, t.bytes);
                answer += buf;
            }
            return answer;
        }
        if (cmd == "dump") {
            const std::string system = word(in), path = word(in);
            const Buffer<float> &y = output(system);
            std::ofstream out(path, std::ios::binary);
            if (!out.write(reinterpret_cast<const char *>(y.data()), (std::streamsize)(y.number_of_elements() * sizeof(float))))
                throw std::runtime_error("cannot write " + path);
            return path;
        }
        throw std::invalid_argument("unknown command '" + cmd + "'");
    }

private:
    static std::string word(std::istringstream &in) {
        std::string w;
        if (!(in >> w)) throw std::invalid_argument("missing argument");
        return w;
    }

    std::string load(std::istringstream &in) {
        auto s = std::make_unique<Shape>();
        std::string dir;
        if (!(in >> s->name >> s->M >> s->K >> s->N >> dir) || s->M < 1 || s->K < 1 || s->N < 1)
            throw std::invalid_argument("usage: load NAME M K N DIR");
        shape_.reset();  // free the previous shape's buffers and kernel first
        s->x = Buffer<float>(s->K, s->M);
        s->w = Buffer<float>(s->N, s->K);
        s->bias = Buffer<float>(s->N);
        read_floats(dir + "/x.f32", s->x.data(), (size_t)s->M * s->K);
        read_floats(dir + "/w.f32", s->w.data(), (size_t)s->K * s->N);
        read_floats(dir + "/bias.f32", s->bias.data(), (size_t)s->N);
        shape_ = std::move(s);
        return shape_->name;
    }

    std::string load_attention(std::istringstream &in, bool train = false) {
        auto s = std::make_unique<Shape>();
        AttentionShape &a = s->attention;
        int causal = 0;
        std::string dir;
        if (!(in >> s->name >> a.batch >> a.queries >> a.keys >> a.depth >> causal >> dir) || a.batch < 1 || a.queries < 1 ||
            a.keys < 1 || a.depth < 1)
            throw std::invalid_argument(std::string("usage: ") + (train ? "load_attention_train" : "load_attention") +
                                        " NAME B S L D CAUSAL DIR");
        a.causal = causal != 0;
        shape_.reset();
        if (train) {
            s->train = std::make_unique<AttentionTrainSystem>(a, dir);
            shape_ = std::move(s);
            return shape_->name;
        }
        s->q = Buffer<float>((int)a.depth, (int)a.queries, (int)a.batch);
        s->k = Buffer<float>((int)a.depth, (int)a.keys, (int)a.batch);
        s->v = Buffer<float>((int)a.depth, (int)a.keys, (int)a.batch);
        read_floats(dir + "/q.f32", s->q.data(), s->q.number_of_elements());
        read_floats(dir + "/k.f32", s->k.data(), s->k.number_of_elements());
        read_floats(dir + "/v.f32", s->v.data(), s->v.number_of_elements());
        shape_ = std::move(s);
        return shape_->name;
    }

    std::string load_block(std::istringstream &in) {
        auto s = std::make_unique<Shape>();
        TransformerBlockShape b;
        int64_t tokens = 0, past = -1;
        std::string dir;
        if (!(in >> s->name >> tokens >> past >> b.hidden >> b.heads >> b.kv_heads >> b.head_dim >> b.ffn >> dir) || tokens < 1 ||
            past < 0)
            throw std::invalid_argument("usage: load_block NAME T PAST HIDDEN HEADS KV_HEADS HEAD_DIM FFN DIR");
        shape_.reset();
        s->M = (int)tokens;
        s->N = (int)b.hidden;
        s->block = std::make_unique<BlockSystem>(b, tokens, past, dir);
        shape_ = std::move(s);
        return shape_->name;
    }

    Shape &shape() {
        if (!shape_) throw std::invalid_argument("no shape loaded");
        return *shape_;
    }

    std::string prepare(const std::string &system) {
        Shape &s = shape();
        const auto t0 = SteadyClock::now();
        Buffer<float> &y = s.y[system] =
            s.attention.batch > 0 && system == "tessel_attention"
                ? Buffer<float>((int)s.attention.depth, (int)s.attention.queries, (int)s.attention.batch)
                : Buffer<float>(s.N, s.M);
        Shape *p = &s;
        if (system == "fma_probe") {
            if (!probe_)
                probe_ = std::make_unique<autosched::FmaPeakProbe>(
                    o_.threads, 0.02,
                    target_.has_feature(Halide::Target::AVX512) ? autosched::VectorIsa::Avx512 : autosched::VectorIsa::Avx2);
            s.call[system] = [this] { probe_->run(); };
            s.call[system]();
            char buf[96];
            std::snprintf(buf, sizeof buf, "%.6f %.0f", seconds_since(t0), probe_->flops());
            return buf;
        }
        if (system == "read_probe") {
            // One read of 256 MiB (past the last-level cache) in the fastest of stream_read's
            // patterns, chosen once: the same-run read floor a decode step is compared with.
            if (read_data_.empty()) {
                read_data_.assign(size_t(64) << 20, 1.0f);
                double best = 1e30;
                for (const autosched::ReadPattern &pattern : autosched::kReadPatterns) {
                    const auto r0 = SteadyClock::now();
                    for (int i = 0; i < 3; i++)
                        sink_ = sink_ + autosched::stream_read(read_data_.data(), read_data_.size(), o_.threads, pattern);
                    if (const double t = seconds_since(r0); t < best) best = t, read_pattern_ = pattern;
                }
            }
            s.call[system] = [this] {
                sink_ = sink_ + autosched::stream_read(read_data_.data(), read_data_.size(), o_.threads, read_pattern_);
            };
            s.call[system]();
            char buf[96];
            std::snprintf(buf, sizeof buf, "%.6f %.0f", seconds_since(t0), (double)(read_data_.size() * sizeof(float)));
            return buf;
        }
        if (system == "tessel_attention_train") {
            if (!s.train) throw std::invalid_argument("tessel_attention_train needs load_attention_train");
            y = *s.train->outputs().get();  // the system's own buffer (shared): nothing to convert
            s.train->prepare(target_);
            s.call[system] = [p] { p->train->run(); };
        } else if (system == "tessel_block") {
            if (!s.block) throw std::invalid_argument("tessel_block needs load_block");
            s.block->prepare(target_);
            s.call[system] = [p] { p->block->run(); };
        } else if (system == "tessel_attention") {
            if (s.attention.batch < 1) throw std::invalid_argument("tessel_attention needs load_attention");
            s.attention_layer = std::make_unique<AttentionLayer>(s.attention, target_);
            s.call[system] = [p, &y] { p->attention_layer->run(p->q, p->k, p->v, y); };
        } else if (system == "tessel") {
            s.layer = std::make_unique<GeluLayer>(GeluForm::Tanh, dsl::NumericMode::Fast, schedule_, target_);
            s.call[system] = [p, &y] { p->layer->run(p->x, p->w, p->bias, y); };
        } else if (system == "tessel_panels") {
            s.panels = std::make_unique<GroupVariant>(
                make_group_variant("w_panels", sched::resolve_group_schedule(o_.schedule, target_), target_));
            s.panel_buffers = {{"x", &s.x}, {"w", &s.w}, {"bias", &s.bias}, {"y", &y}};
            s.prepared = s.panels->prepare_weights(s.panel_buffers);
            s.call[system] = [p] { p->panels->run(p->panel_buffers, p->prepared); };
        } else if (system == "openblas") {
            s.call[system] = [p, &y] {
                gelu_mlp_openblas(p->x.data(), p->w.data(), p->bias.data(), y.data(), p->M, p->K, p->N, GeluForm::Tanh);
            };
        } else {
            throw std::invalid_argument(
                "unknown system '" + system +
                "' (tessel, tessel_panels, openblas, tessel_attention, tessel_attention_train, tessel_block)");
        }
        s.call[system]();
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.6f", seconds_since(t0));
        return buf;
    }

    std::string time(const std::string &system, int n, bool flush) {
        Shape &s = shape();
        auto it = s.call.find(system);
        if (it == s.call.end()) throw std::invalid_argument(system + " is not prepared for " + s.name);
        // The one system on the harness: n timed calls, no warm-up (the caller warms up).
        InterleavedOptions io;
        io.warmup_rounds = 0;
        io.stop = StoppingRule::fixed(n);
        if (flush) io.before_call = [this](size_t) { flusher_.flush(o_.threads); };
        Interleaved harness({Contender(system, it->second)}, io);
        std::string answer;
        for (const double t : harness.run().samples[0]) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%s%.9f", answer.empty() ? "" : " ", t);
            answer += buf;
        }
        return answer;
    }

    const Buffer<float> &output(const std::string &system) {
        Shape &s = shape();
        auto it = s.y.find(system);
        if (it == s.y.end()) throw std::invalid_argument(system + " has no output for " + s.name);
        if (system == "tessel_block") {  // converted here, not in the timed calls
            const std::vector<float> out = s.block->output();
            std::copy(out.begin(), out.end(), it->second.data());
        }
        return it->second;
    }

    Options o_;
    Halide::Target target_;
    sched::ScheduleSpec schedule_;
    // 256 MiB, as tessel_bench's, on plain threads as the Python workers flush (MachineProbes.h).
    autosched::CacheFlusher flusher_{size_t(256) << 20, autosched::CacheFlusher::Threads::Plain};
    std::unique_ptr<Shape> shape_;
    std::unique_ptr<autosched::FmaPeakProbe> probe_;  // calibrated once
    std::vector<float> read_data_;                    // read_probe's 256 MiB
    autosched::ReadPattern read_pattern_;
    volatile float sink_ = 0;
};

int run(int argc, char **argv) {
    const Options o = parse_options(argc, argv);
    // Threads for both systems, as tessel_bench sets them: Halide's pool, OpenMP, OpenBLAS.
    setenv("HL_NUM_THREADS", std::to_string(o.threads).c_str(), 1);
    omp_set_num_threads(o.threads);
    openblas_set_num_threads(o.threads);
    Worker worker(o);
    const int parallel = openblas_get_parallel();
    std::cout << "info target: " << parse_target(o.target).to_string() << "\n"
              << "info schedule: " << o.schedule << "\n"
              << "info threads: " << o.threads << "\n"
              << "info openblas: " << openblas_description() << ", "
              << (parallel == 2   ? "OpenMP"
                  : parallel == 1 ? "pthread"
                                  : "sequential")
              << " build\n"
              << "ready" << std::endl;
    std::string line;
    while (std::getline(std::cin, line)) {
        if (line.empty()) continue;
        if (line == "quit") break;
        try {
            const std::string answer = worker.handle(line);
            std::cout << "ok " << answer << std::endl;
        } catch (const std::exception &e) {
            std::string msg = e.what();
            for (char &c : msg)
                if (c == '\n') c = ' ';
            std::cout << "error " << msg << std::endl;
        }
    }
    return 0;
}

}  // namespace
}  // namespace tessel::bench

int main(int argc, char **argv) {
    try {
        return tessel::bench::run(argc, argv);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "tessel_peer_worker: %s\n", e.what());
        return 1;
    }
}
