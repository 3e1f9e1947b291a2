// MeasureTask.cpp: the JSON forms of MeasureTask and Measurement, validate_measurement(), and
// run_measurement(), the one function that compiles, verifies and times a candidate (run by the
// tessel-measure child). Map: enum tables -> fault helpers (the test hooks) -> verification
// against the default library schedule -> JSON -> run_measurement.
#include "autoscheduler/MeasureTask.h"

#include "codegen/Compile.h"
#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"
#include "dsl/passes/GroupExtents.h"
#include "lowering/CompiledGraph.h"
#include "lowering/CompiledKernel.h"
#include "lowering/ScheduleGroup.h"
#include "lowering/TensorBuffers.h"
#include "schedules/ApplySchedule.h"
#include "schedules/ScheduleJson.h"
#include "support/Clock.h"
#include "support/ErrorStats.h"
#include "support/Interleaved.h"
#include "support/JsonField.h"

#include <Halide.h>

#include <sys/resource.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace tessel::autosched {

namespace {

const std::pair<Status, const char *> kStatuses[] = {{Status::Ok, "ok"},
                                                     {Status::CompileError, "compile-error"},
                                                     {Status::RuntimeError, "runtime-error"},
                                                     {Status::Crash, "crash"},
                                                     {Status::Timeout, "timeout"},
                                                     {Status::WrongResult, "wrong-result"},
                                                     {Status::InvalidResult, "invalid-result"}};
const std::pair<Fault, const char *> kFaults[] = {{Fault::None, "none"},
                                                  {Fault::Crash, "crash"},
                                                  {Fault::Hang, "hang"},
                                                  {Fault::HalideError, "halide-error"},
                                                  {Fault::WrongResult, "wrong-result"},
                                                  {Fault::NegativeTime, "negative-time"},
                                                  {Fault::NanTime, "nan-time"},
                                                  {Fault::Flood, "flood"},
                                                  {Fault::OutOfMemory, "out-of-memory"},
                                                  {Fault::BadExit, "bad-exit"}};

template <typename E, size_t N>
E parse_enum(const std::pair<E, const char *> (&table)[N], const std::string &s, const char *what) {
    std::string known;
    for (const auto &[v, name] : table) {
        if (s == name) return v;
        known += (known.empty() ? "" : ", ") + std::string(name);
    }
    throw std::invalid_argument("unknown " + std::string(what) + " '" + s + "' (expected one of: " + known + ")");
}

Measurement failed(Status s, std::string message, double compile_seconds = 0) {
    Measurement m;
    m.status = s;
    m.message = std::move(message);
    m.compile_seconds = compile_seconds;
    return m;
}

/** Evicts a kernel's inputs: touches every cache line of `buffer`, larger than the caches. */
void flush_caches(std::vector<char> &buffer) {
    static volatile char flush_sink = 0;
    for (size_t b = 0; b < buffer.size(); b += 64) buffer[b] = (char)(buffer[b] + 1);
    for (size_t b = 0; b < buffer.size(); b += 64) flush_sink = flush_sink + buffer[b];
}

/** The fault schedule: storing the contraction inside the loop it is computed at passes
 * Tessel's checks (both loops exist) but Halide's lowering rejects the location. Needs a group
 * with a contraction ("matmul"), like every group the tuner measures. */
sched::ScheduleSpec halide_rejected_schedule(const lower::LoweredGroup &g) {
    const std::string &y = g.output_names.at(0);
    sched::ScheduleSpec s("fault_halide_error");
    s.compute_at("matmul", y, "m").store_at("matmul", y, "n");
    return s;
}

/** A buffer of value `v` of logical `shape` as the kernel takes it: v's layout (panel padding
 * included) and storage type; inputs get uniform values in [-1, 1) rounded to that type (a
 * last panel's padding 0), outputs are left uninitialized. */
Halide::Buffer<> make_buffer(const dsl::Graph &g, dsl::ValueId v, const std::vector<int64_t> &shape, const std::string &name,
                             std::mt19937 *rng) {
    if (!rng) return make_value_buffer(g, v, shape, name);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    dsl::Tensor t;
    t.dtype = g.node(v).type.dtype;
    t.shape = shape;
    t.data.resize((size_t)t.numel());
    for (double &x : t.data) x = dist(*rng);
    return to_value_buffer(g, v, t, name);
}

/** The OutOfMemory fault: reserve 64 MiB blocks until allocation fails under RLIMIT_AS
 * (std::bad_alloc reaches tessel-measure's main). The blocks are not touched, so the test costs
 * address space, not memory; without a limit it refuses rather than reserve without end. */
[[noreturn]] void exhaust_memory() {
    rlimit r{};
    if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) {
        std::fprintf(stderr, "tessel-measure: the out-of-memory fault needs an address-space limit (memory_limit_bytes)\n");
        std::abort();
    }
    std::vector<std::unique_ptr<char[]>> blocks;
    for (;;) blocks.emplace_back(new char[64 << 20]);
}

/** The Flood fault: stdout without end (the parent's output cap must stop it). */
[[noreturn]] void flood_stdout() {
    static char line[4096];
    std::memset(line, 'x', sizeof line);
    for (;;)
        if (std::fwrite(line, 1, sizeof line, stdout) == 0) std::_Exit(4);
}

/** Compare every output of the candidate with the reference (logical tensors, whatever the
 * outputs' layouts and storage types); "" when they match within `tol`, else the first output
 * and element past it, with both values. `max_error` gets the largest. */
std::string compare_outputs(const CompiledKernel &k, const std::vector<dsl::Tensor> &got, const std::vector<dsl::Tensor> &want,
                            double tol, double *max_error) {
    std::string first_bad;
    *max_error = 0;
    for (size_t a = 0; a < k.arguments().size(); a++) {
        if (!k.arguments()[a].is_output) continue;
        const std::vector<double> &g = got[a].data, &w = want[a].data;
        for (size_t i = 0; i < g.size(); i++) {
            const double e = pair_error(g[i], w[i]).second;
            if (e > *max_error) *max_error = e;
            if (e > tol && first_bad.empty()) {
                std::ostringstream s;
                s << "output '" << k.arguments()[a].name << "' element " << i << ": got " << g[i] << ", reference " << w[i];
                first_bad = s.str();
            }
        }
    }
    return first_bad;
}

/** Reads a time field; JSON has no NaN or infinity (nlohmann writes them as null), so null is NaN. */
double time_field(const nlohmann::json &j, const char *name) {
    auto it = j.find(name);
    if (it == j.end()) return 0.0;
    if (it->is_null()) return NAN;
    return it->get<double>();
}

}  // namespace

MeasureTask make_measure_task(const dsl::Graph &g, const dsl::FusionGroup &group, const std::map<std::string, int64_t> &symbols,
                              const std::string &target) {
    MeasureTask t;
    t.graph_text = dsl::print(g);
    t.graph_name = g.name;
    t.group.name = group.name;
    t.group.kind = group.kind;
    for (dsl::ValueId v : group.nodes) t.group.nodes.push_back(g.display_name(v));
    for (dsl::ValueId v : group.outputs) t.group.outputs.push_back(g.display_name(v));
    t.symbols = symbols;
    t.target = target;
    return t;
}

dsl::FusionGroup resolve_group(const dsl::Graph &g, const MeasureGroup &mg) {
    dsl::FusionGroup fg;
    fg.name = mg.name;
    fg.kind = mg.kind;
    auto find = [&](const std::string &name) {
        const dsl::ValueId v = g.find(name);
        if (v == dsl::kNoValue)
            throw std::invalid_argument("group '" + mg.name + "' names %" + name + ", which graph '" + g.name +
                                        "' does not have");
        return v;
    };
    for (const auto &n : mg.nodes) fg.nodes.push_back(find(n));
    for (const auto &n : mg.outputs) fg.outputs.push_back(find(n));
    if (fg.outputs.empty()) throw std::invalid_argument("group '" + mg.name + "' has no outputs");
    return fg;
}

std::string to_string(Status s) {
    for (const auto &[v, name] : kStatuses)
        if (v == s) return name;
    return "?";
}
std::string to_string(Fault f) {
    for (const auto &[v, name] : kFaults)
        if (v == f) return name;
    return "?";
}
Status parse_status(const std::string &s) { return parse_enum(kStatuses, s, "measurement status"); }
Fault parse_fault(const std::string &s) { return parse_enum(kFaults, s, "fault"); }

nlohmann::json to_json(const MeasureTask &t) {
    nlohmann::json faults = nlohmann::json::object();
    for (const auto &[name, f] : t.fault_by_schedule) faults[name] = to_string(f);
    return {{"graph_text", t.graph_text},
            {"graph_name", t.graph_name},
            {"group", to_json(t.group)},
            {"symbols", t.symbols},
            {"target", t.target},
            {"repeats", t.repeats},
            {"warmup", t.warmup},
            {"timeout_seconds", t.timeout_seconds},
            {"seed", t.seed},
            {"flush_bytes", t.flush_bytes},
            {"verify", t.verify},
            {"verify_tolerance", t.verify_tolerance},
            {"memory_limit_bytes", t.memory_limit_bytes},
            {"max_rounds", t.max_rounds},
            {"confidence", t.confidence},
            {"fault", to_string(t.fault)},
            {"fault_by_schedule", faults}};
}

MeasureTask measure_task_from_json(const nlohmann::json &j) {
    MeasureTask t;
    t.graph_text = j.at("graph_text").get<std::string>();
    t.graph_name = j.value("graph_name", t.graph_name);
    t.group = measure_group_from_json(j.at("group"), "task.group");
    t.symbols = j.value("symbols", t.symbols);
    t.target = j.value("target", t.target);
    t.repeats = j.value("repeats", t.repeats);
    t.warmup = j.value("warmup", t.warmup);
    t.timeout_seconds = j.value("timeout_seconds", t.timeout_seconds);
    t.seed = j.value("seed", t.seed);
    t.flush_bytes = j.value("flush_bytes", t.flush_bytes);
    t.verify = j.value("verify", t.verify);
    t.verify_tolerance = j.value("verify_tolerance", t.verify_tolerance);
    t.memory_limit_bytes = j.value("memory_limit_bytes", t.memory_limit_bytes);
    t.max_rounds = j.value("max_rounds", t.max_rounds);
    t.confidence = j.value("confidence", t.confidence);
    t.fault = parse_fault(j.value("fault", std::string("none")));
    const nlohmann::json faults = j.value("fault_by_schedule", nlohmann::json::object());
    for (const auto &[name, f] : faults.items()) t.fault_by_schedule[name] = parse_fault(f.get<std::string>());
    return t;
}

nlohmann::json to_json(const Measurement &m) {
    return {{"status", to_string(m.status)},        {"median_ms", m.median_ms}, {"samples", m.samples}, {"message", m.message},
            {"compile_seconds", m.compile_seconds}, {"max_error", m.max_error}};
}

Measurement measurement_from_json(const nlohmann::json &j) {
    Measurement m;
    m.status = parse_status(j.at("status").get<std::string>());
    m.median_ms = time_field(j, "median_ms");
    if (auto it = j.find("samples"); it != j.end())
        for (const auto &s : *it) m.samples.push_back(s.is_null() ? NAN : s.get<double>());
    m.message = j.value("message", std::string());
    m.compile_seconds = time_field(j, "compile_seconds");
    m.max_error = time_field(j, "max_error");
    return m;
}

Measurement validate_measurement(Measurement m) {
    if (!m.ok()) return m;
    std::string why;
    if (!std::isfinite(m.median_ms) || m.median_ms < 0)
        why = "median " + std::to_string(m.median_ms) + " ms";
    else if (m.samples.empty())
        why = "no timed samples";
    for (double s : m.samples)
        if (why.empty() && (!std::isfinite(s) || s < 0)) why = "sample " + std::to_string(s) + " ms";
    if (why.empty()) return m;
    m.status = Status::InvalidResult;
    m.message = "the measurement is not a usable time (" + why + "); a time must be finite and non-negative";
    m.median_ms = 0;
    return m;
}

namespace {

/** The task's graph, group and extents, parsed once for all its candidates (kernels point
 * into the graph, so it outlives them). */
struct ParsedTask {
    dsl::Graph graph;
    dsl::FusionGroup group;
    Halide::Target target;
    std::map<std::string, int64_t> extents;
};

/** One candidate compiled, with its inputs, verified: ready to be timed. */
class Candidate {
public:
    Candidate(const MeasureTask &task, const ParsedTask &p, const sched::ScheduleSpec &schedule)
        : task_(task), p_(p), fault_(task.fault_for(schedule.name)), schedule_(schedule) {}

    /** Compiles, fills the inputs, honours the fault hooks, verifies. False: `result()` says why. */
    bool prepare() {
        const auto t0 = SteadyClock::now();
        try {
            const sched::ScheduleSpec applied =
                fault_ == Fault::HalideError ? halide_rejected_schedule(lower::lower_group(p_.graph, p_.group)) : schedule_;
            try {
                kernel_ =
                    std::make_unique<CompiledKernel>(p_.graph, p_.group, applied, p_.target, KernelBackend::Jit, p_.extents);
            } catch (const sched::ScheduleError &e) {
                return fail(Status::CompileError, e.what(), seconds_since(t0));
            }
            std::mt19937 rng(task_.seed);
            for (const auto &a : kernel_->arguments())
                buffers_.push_back(make_buffer(p_.graph, a.value, shape_of(a), a.name, a.is_output ? nullptr : &rng));
        } catch (const Halide::Error &e) {
            return fail(Status::CompileError, std::string("Halide: ") + e.what(), seconds_since(t0));
        } catch (const std::exception &e) {
            return fail(Status::CompileError, e.what(), seconds_since(t0));
        }
        result_.compile_seconds = seconds_since(t0);
        for (auto &b : buffers_) raw_.push_back(b.raw_buffer());

        if (fault_ == Fault::Crash) std::abort();
        if (fault_ == Fault::Hang)
            for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
        if (fault_ == Fault::Flood) flood_stdout();
        if (fault_ == Fault::OutOfMemory) exhaust_memory();
        return !task_.verify || verify();
    }

    /** One call; false (and result() a RuntimeError) when it failed. */
    bool run_once() {
        try {
            kernel_->run(raw_);
        } catch (const CompileError &e) {
            return fail(Status::RuntimeError, e.what(), result_.compile_seconds);
        }
        if (fault_ == Fault::WrongResult)
            for (size_t a = 0; a < buffers_.size(); a++)
                if (kernel_->arguments()[a].is_output) Halide::Buffer<float>(buffers_[a]).data()[0] += 1.0f;
        return true;
    }

    /** The candidate on the interleaved harness: warm-up calls run as they are; a timed call
     * first evicts the inputs (`flush_buffer`, untimed), and a failed call drops the candidate. */
    Contender contender(std::vector<char> &flush_buffer) {
        return Contender(schedule_.name, [this, &flush_buffer](Call &call) {
            if (!call.warming_up()) flush_caches(flush_buffer);
            bool ok = true;
            call.time([&] { ok = run_once(); });
            if (!ok) call.fail(result_.message);
        });
    }

    /** Timed samples in seconds, stored in ms. */
    void add_samples(const std::vector<double> &seconds) {
        for (double s : seconds) result_.samples.push_back(s * 1e3);
    }

    /** The Measurement: the failure, or the samples with their median (fault hooks applied). */
    Measurement result() const {
        if (failed_) return result_;
        Measurement m = result_;
        m.median_ms = median(m.samples);
        if (fault_ == Fault::NegativeTime) m.samples.assign(m.samples.size(), -1.0), m.median_ms = -1.0;
        if (fault_ == Fault::NanTime) m.samples.assign(m.samples.size(), NAN), m.median_ms = NAN;
        return m;
    }
    bool ok() const { return !failed_; }

private:
    const MeasureTask &task_;
    const ParsedTask &p_;
    Fault fault_;
    sched::ScheduleSpec schedule_;
    std::unique_ptr<CompiledKernel> kernel_;
    std::vector<Halide::Buffer<>> buffers_;  // kernel_->arguments() order

    std::vector<int64_t> shape_of(const KernelArgument &a) const { return concrete_shape(p_.graph, a.value, task_.symbols); }
    /** The logical tensors of the output buffers in `bs` (inputs left empty). */
    std::vector<dsl::Tensor> output_tensors(const std::vector<Halide::Buffer<>> &bs) const {
        std::vector<dsl::Tensor> out(bs.size());
        for (size_t a = 0; a < bs.size(); a++) {
            const KernelArgument &arg = kernel_->arguments()[a];
            if (arg.is_output) out[a] = from_value_buffer(p_.graph, arg.value, bs[a], shape_of(arg));
        }
        return out;
    }
    std::vector<halide_buffer_t *> raw_;
    Measurement result_;
    bool failed_ = false;

    bool fail(Status s, std::string message, double compile_seconds) {
        const double max_error = result_.max_error;
        result_ = failed(s, std::move(message), compile_seconds);
        result_.max_error = max_error;
        failed_ = true;
        return false;
    }

    // Verify before timing: the candidate's outputs against the group's default library
    // schedule on the same inputs, so a miscompiled candidate never reports a time.
    bool verify() {
        if (!run_once()) return false;
        std::vector<Halide::Buffer<>> want;
        try {
            const sched::ScheduleSpec ref = lower::default_group_schedule(lower::lower_group(p_.graph, p_.group), p_.target);
            const CompiledKernel reference(p_.graph, p_.group, ref, p_.target, KernelBackend::Jit, p_.extents);
            if (reference.arguments().size() != buffers_.size())
                throw std::logic_error("the reference kernel takes other arguments than the candidate");
            std::vector<halide_buffer_t *> ref_raw;
            for (size_t a = 0; a < buffers_.size(); a++) {
                const KernelArgument &arg = kernel_->arguments()[a];
                // Inputs shared with the candidate; outputs of its own.
                want.push_back(arg.is_output ? make_buffer(p_.graph, arg.value, shape_of(arg), arg.name, nullptr) : buffers_[a]);
                ref_raw.push_back(want.back().raw_buffer());
            }
            reference.run(ref_raw);
        } catch (const std::exception &e) {
            return fail(Status::CompileError, std::string("the reference for verification failed: ") + e.what(),
                        result_.compile_seconds);
        }
        const std::string bad =
            compare_outputs(*kernel_, output_tensors(buffers_), output_tensors(want), task_.verify_tolerance, &result_.max_error);
        if (bad.empty()) return true;
        std::ostringstream msg;
        msg << "wrong result: max relative error " << result_.max_error << " vs the default library schedule (tolerance "
            << task_.verify_tolerance << "); first: " << bad;
        return fail(Status::WrongResult, msg.str(), result_.compile_seconds);
    }
};

/** Parses the task; nullopt (and `*failure`) when it is malformed. */
std::unique_ptr<ParsedTask> parse_task(const MeasureTask &task, Measurement *failure) {
    auto p = std::make_unique<ParsedTask>();
    try {
        p->target = parse_target(task.target);
        p->graph = dsl::parse(task.graph_text, task.graph_name);
        p->group = resolve_group(p->graph, task.group);
        const auto e = dsl::group_extents(p->graph, p->group).concrete(task.symbols);
        if (!e) throw std::invalid_argument("a size of group '" + p->group.name + "' is not bound by the task's symbols");
        p->extents = *e;
    } catch (const std::exception &e) {
        *failure = failed(Status::CompileError, std::string("preparing the task failed: ") + e.what());
        return nullptr;
    }
    return p;
}

/** The candidates of `schedules` compiled and verified, then timed together on the harness
 * (support/Interleaved.h) until `stop`; one Measurement per schedule. */
std::vector<Measurement> measure_together(const MeasureTask &task, const std::vector<sched::ScheduleSpec> &schedules,
                                          const StoppingRule &stop) {
    Measurement failure;
    const std::unique_ptr<ParsedTask> parsed = parse_task(task, &failure);
    if (!parsed) return std::vector<Measurement>(schedules.size(), failure);
    std::vector<std::unique_ptr<Candidate>> candidates;
    std::vector<char> flush_buffer((size_t)std::max<int64_t>(0, task.flush_bytes));
    std::vector<Contender> contenders;
    std::vector<Candidate *> timed;
    for (const auto &s : schedules) {
        candidates.push_back(std::make_unique<Candidate>(task, *parsed, s));
        if (!candidates.back()->prepare()) continue;
        timed.push_back(candidates.back().get());
        contenders.push_back(timed.back()->contender(flush_buffer));
    }
    InterleavedOptions o;
    o.warmup_rounds = std::max(0, task.warmup);
    o.stop = stop;
    Interleaved harness(std::move(contenders), o);
    const InterleavedResult &r = harness.run();
    for (size_t k = 0; k < timed.size(); k++) timed[k]->add_samples(r.samples[k]);
    std::vector<Measurement> out;
    for (const auto &c : candidates) out.push_back(c->result());
    return out;
}

}  // namespace

Measurement run_measurement(const MeasureTask &task, const sched::ScheduleSpec &schedule) {
    return measure_together(task, {schedule}, StoppingRule::fixed(task.repeats)).at(0);
}

std::vector<Measurement> run_interleaved_measurement(const MeasureTask &task, const std::vector<sched::ScheduleSpec> &schedules) {
    const int min_rounds = std::max(1, task.repeats);
    return measure_together(task, schedules, StoppingRule::until_separated(task.confidence, min_rounds, task.max_rounds, 5));
}

}  // namespace tessel::autosched
