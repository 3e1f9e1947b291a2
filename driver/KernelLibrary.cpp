// Map: plan (simplify -> rematerialize -> fusion, as tessel compile) -> refusals -> kernels ahead
// of time without a runtime, one runtime object -> the generated entry (EntryWriter: argument
// checks, sizes, per-call packing over the plan's conflict table, descriptors, dispatch) ->
// c++ -c -> ar.
#include "driver/KernelLibrary.h"

#include "autoscheduler/SpecializationPlanner.h"
#include "codegen/Compile.h"
#include "driver/ParallelLoopText.h"
#include "compiler/Plan.h"
#include "driver/TextFile.h"
#include "driver/VariantCosts.h"
#include "dsl/Simplify.h"
#include "dsl/analysis/BufferAssignment.h"
#include "dsl/analysis/MemoryTraffic.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"
#include "dsl/passes/Rematerialize.h"
#include "lowering/CompiledGraph.h"
#include "lowering/ScheduleGroup.h"
#include "schedules/Library.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace tessel {

namespace fs = std::filesystem;
using dsl::ValueId;

namespace {

/** A C and C++ identifier for a graph name: other characters become '_', a leading digit gets
 * a letter, and a keyword gets a trailing '_' (`%do` is the parameter `do_`). */
std::string identifier(const std::string &s) {
    static const std::set<std::string> keywords = {
        "auto", "bool", "break", "case", "char", "class", "const", "continue", "default", "delete", "do", "double",
        "else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "new", "operator", "private",
        "public", "register", "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch",
        "template", "this", "throw", "try", "typedef", "union", "unsigned", "using", "virtual", "void", "volatile",
        "while", "workspace", "workspace_bytes", "arena", "owned", "peak", "offsets", "rc", "previous"};
    std::string out;
    for (char c : s) out += std::isalnum((unsigned char)c) ? c : '_';
    if (out.empty() || std::isdigit((unsigned char)out[0])) out = "v" + out;
    if (keywords.count(out) || out.rfind("sym_", 0) == 0 || out.rfind("buf_", 0) == 0 || out.rfind("dims_", 0) == 0) out += "_";
    return out;
}

/** A C string literal. */
std::string quoted(const std::string &s) {
    std::string out = "\"";
    for (char c : s) out += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
    return out + "\"";
}

void run_or_throw(const std::string &cmd, const std::string &what) {
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error(what + " failed: " + cmd);
}

/** Whether the group's output is a view of its operand (no kernel runs for it). */
bool is_view_group(const CompiledKernel &k, const dsl::BufferAssignment &memory) {
    for (const auto &a : k.arguments())
        if (const auto *b = memory.buffer(a.value); a.is_output && b && b->kind == dsl::LogicalBuffer::Kind::View) return true;
    return false;
}

/** The generated entry's source, statement by statement. */
class EntryWriter {
public:
    enum class Entry { Whole, Prepare, RunPrepared };
    struct Arg {
        ValueId value;
        std::string c;
        bool output;
    };
    /** One compiled copy of the graph's kernels per target, best first: the entry runs the first
     * whose features the CPU has. */
    struct TargetKernels {
        std::string suffix;          ///< appended to every kernel's name: "avx512"...
        std::string cpu_check;       ///< a C condition on __builtin_cpu_supports
        std::string target;          ///< Halide's target string, for messages
        const CompiledGraph *program;
    };

    /** `kept`: the memory plan with the prepared groups' outputs kept between calls (Kind::Prepared),
     * for graphs with prepared groups: then the prepare-weights entries are written too. */
    EntryWriter(const dsl::Graph &g, const dsl::FusionPlan &plan, std::vector<TargetKernels> targets,
                const dsl::BufferAssignment &memory, const dsl::BufferAssignment *kept, std::string name)
        : g_(g), plan_(plan), targets_(std::move(targets)), memory_(memory), kept_(kept), name_(std::move(name)) {
        for (ValueId v : g.order())
            if (g.node(v).op == dsl::Op::Input) {
                args_.push_back({v, identifier(g.display_name(v)), false});
                if (g.node(v).attrs.weight) weights_.push_back(args_.back());
            }
        if (kept_)
            for (const auto &b : kept_->buffers)
                if (b.kind == dsl::LogicalBuffer::Kind::Prepared) prepared_.push_back(b.value);
        for (size_t i = 0; i < g.outputs.size(); i++) args_.push_back({g.outputs[i], identifier(g.output_name(i)), true});
        for (ValueId v : g.order())
            for (const auto &d : g.node(v).type.dims)
                if (d.kind == dsl::Dim::Kind::Symbol) symbols_.insert(d.symbol);
    }

    std::string parameters() const { return parameters_of(args_); }
    static std::string parameters_of(const std::vector<Arg> &args) {
        std::string p;
        for (const auto &a : args) p += "struct halide_buffer_t *" + a.c + ", ";
        return p;
    }

    std::string header() const {
        std::ostringstream h;
        h << "// Generated by `tessel lib`: graph " << g_.name << ", whole-graph entry. Do not edit.\n"
          << "#pragma once\n#include <stdint.h>\n#include \"HalideRuntime.h\"\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
        h << "/* Arguments, in order (a rank-0 tensor is a 1-D buffer of extent 1; all dense, f32):\n";
        for (const auto &a : args_)
            h << " *   " << (a.output ? "output " : "input  ") << a.c << " : " << dsl::print_type(g_, g_.node(a.value).type) << "\n";
        h << " * Returns 0, or 1 (bad argument), 2 (workspace), 3 (a kernel failed); " << name_
          << "_error() says what. */\n";
        h << "int " << name_ << "(" << parameters() << "void *workspace, int64_t workspace_bytes);\n";
        h << "/* Bytes of workspace a call with these buffers needs (64-byte aligned); -1 on a bad argument. */\n";
        h << "int64_t " << name_ << "_workspace_bytes(" << parameters().substr(0, parameters().size() - 2) << ");\n";
        if (!prepared_.empty()) {
            const std::string w = parameters_of(weights_);
            h << "/* Weights prepared once. The entry above computes the values derived from the weights alone on\n"
                 " * every call; instead, prepare them once per weight change into a 64-byte aligned block of\n"
                 " * " << name_ << "_prepared_bytes(weights) bytes with " << name_ << "_prepare(weights, block, bytes),\n"
                 " * then call " << name_ << "_run_prepared(the entry's buffers, block, workspace, bytes), which\n"
                 " * runs only the per-call kernels and reads the block (never writes it). Weights:";
            for (const auto &a : weights_) h << " " << a.c;
            h << ". */\n";
            h << "int64_t " << name_ << "_prepared_bytes(" << w.substr(0, w.size() - 2) << ");\n";
            h << "int " << name_ << "_prepare(" << w << "void *prepared, int64_t prepared_bytes);\n";
            h << "int " << name_ << "_run_prepared(" << parameters() << "const void *prepared, void *workspace, int64_t workspace_bytes);\n";
            h << "/* Bytes of workspace " << name_ << "_run_prepared needs; -1 on a bad argument. */\n";
            h << "int64_t " << name_ << "_run_prepared_workspace_bytes(" << parameters().substr(0, parameters().size() - 2) << ");\n";
        }
        h << "/* The last failure's message on this thread (\"\" after a success). */\nconst char *" << name_ << "_error(void);\n";
        h << "/* Which variant served each group in the last call on this thread. */\nconst char *" << name_ << "_variants(void);\n";
        h << "\n#ifdef __cplusplus\n}\n#endif\n";
        return h.str();
    }

    std::string source() const {
        std::ostringstream s;
        s << "// Generated by `tessel lib` for graph " << g_.name << ". Do not edit.\n#include \"" << name_ << ".h\"\n";
        for (const auto &t : targets_)
            for (const auto &cg : t.program->groups())
                for (size_t i = 0; i < cg.kernel->variants().size(); i++)
                    s << "#include \"" << cg.kernel->variant_function(i, cg.kernel->group().name + "_" + t.suffix) << ".h\"\n";
        s << "#include \"tessel_parallel_loop.h\"\n";
        s << R"(#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* C-compatible and free of the C++ library: a consumer links only this archive, -lpthread -ldl. */
static __thread char error_text[1024];
static __thread char variants_text[4096];
static __thread char halide_message[1024];
static int fail(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(error_text, sizeof error_text, fmt, ap);
    va_end(ap);
    return code;
}
static void note_variant(const char *group, const char *variant) {
    const size_t used = strlen(variants_text);
    snprintf(variants_text + used, sizeof variants_text - used, "%s=%s; ", group, variant);
}
/* Parallel loops on OpenMP, as in Tessel's JIT (tessel_parallel_loop.h). */
static int openmp_do_par_for(void *user_context, halide_task_t task, int min, int extent, uint8_t *closure) {
    return tessel_parallel::run_loop(user_context, task, min, extent, closure);
}
static void capture_halide_error(void *user_context, const char *msg) {
    (void)user_context;
    snprintf(halide_message, sizeof halide_message, "%s", msg);
}
/* Best fit, largest first, over the plan's conflict table (the generator's memory plan). */
static int64_t pack(int n, const int64_t *bytes, const unsigned char *conflicts, int64_t *offsets, int *order) {
    int placed = 0;
    int64_t peak = 0;
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && bytes[order[j]] > bytes[order[j - 1]]; j--) { int t = order[j]; order[j] = order[j - 1]; order[j - 1] = t; }
    for (int k = 0; k < n; k++) {
        const int cur = order[k];
        int64_t cursor = 0, best = -1, best_gap = INT64_MAX;
        for (;;) {  /* walk the conflicting placed ranges in offset order */
            int next = -1;
            for (int q = 0; q < placed; q++) {
                const int p = order[q];
                if (!conflicts[cur * n + p] || offsets[p] + bytes[p] <= cursor) continue;
                if (next < 0 || offsets[p] < offsets[next]) next = p;
            }
            if (next < 0) break;
            if (offsets[next] - cursor >= bytes[cur] && offsets[next] - cursor < best_gap) { best = cursor; best_gap = offsets[next] - cursor; }
            if (offsets[next] + bytes[next] > cursor) cursor = offsets[next] + bytes[next];
        }
        offsets[cur] = best >= 0 ? best : cursor;
        placed++;
        if (offsets[cur] + bytes[cur] > peak) peak = offsets[cur] + bytes[cur];
    }
    return peak;
}
static void dense(halide_buffer_t *b, halide_dimension_t *dims, int rank, const int64_t *extents_innermost_first, void *host,
                  int code, int bits) {
    memset(b, 0, sizeof *b);
    b->type.code = (halide_type_code_t)code; b->type.bits = (uint8_t)bits; b->type.lanes = 1;
    b->dimensions = rank; b->dim = dims; b->host = (uint8_t *)host;
    int64_t stride = 1;
    for (int d = 0; d < rank; d++) { dims[d].min = 0; dims[d].extent = (int32_t)extents_innermost_first[d]; dims[d].stride = (int32_t)stride; dims[d].flags = 0; stride *= extents_innermost_first[d]; }
}

const char *)" << name_ << R"(_error(void) { return error_text; }
const char *)" << name_ << R"(_variants(void) { return variants_text; }
)";
        write_profile_recorder(s);
        write_pick_isa(s);
        write_plan_function(s, "plan_call", args_, &memory_);
        write_workspace_bytes(s, "_workspace_bytes", "plan_call", memory_);
        write_entry(s, Entry::Whole);
        if (!prepared_.empty()) {
            write_plan_function(s, "plan_prepared", weights_, nullptr);
            write_plan_function(s, "plan_kept", args_, kept_);
            write_workspace_bytes(s, "_run_prepared_workspace_bytes", "plan_kept", *kept_);
            const std::string w = parameters_of(weights_);
            s << "int64_t " << name_ << "_prepared_bytes(" << w.substr(0, w.size() - 2) << ") {\n" << symbols_locals()
              << "    int64_t poffsets[" << prepared_.size() << "], ptotal = 0;\n    if (plan_prepared(";
            for (const auto &a : weights_) s << a.c << ", ";
            s << "poffsets, &ptotal" << symbols_args() << ")) return -1;\n    return ptotal;\n}\n\n";
            write_entry(s, Entry::Prepare);
            write_entry(s, Entry::RunPrepared);
        }
        return s.str();
    }

private:
    const dsl::Graph &g_;
    const dsl::FusionPlan &plan_;
    std::vector<TargetKernels> targets_;
    const dsl::BufferAssignment &memory_;
    const dsl::BufferAssignment *kept_;
    std::string name_;
    std::vector<Arg> args_, weights_;
    std::vector<ValueId> prepared_;  ///< kept_'s prepared values, in the block's order
    std::set<std::string> symbols_;

    /** C expression of dim d (static or a symbol). */
    static std::string dim_expr(const dsl::Dim &d) {
        return d.is_static() ? std::to_string(d.size) + "LL" : "sym_" + identifier(d.symbol);
    }
    std::vector<dsl::Dim> dims(ValueId v) const {
        std::vector<dsl::Dim> out;
        for (const auto &d : g_.node(v).type.dims) {
            const dsl::Dim r = dsl::resolve_dim(g_, d);
            if (!r.is_static() && r.kind != dsl::Dim::Kind::Symbol)
                throw std::invalid_argument("tessel lib: " + dsl::print_node(g_, v) + " has an extent computed by shape code");
            out.push_back(r);
        }
        return out;
    }
    std::string symbols_args() const {
        std::string s;
        for (const auto &sym : symbols_) s += ", &sym_" + identifier(sym);
        return s;
    }
    std::string symbols_locals() const {
        std::string s;
        for (const auto &sym : symbols_) s += "    int64_t sym_" + identifier(sym) + " = -1;\n";
        return s;
    }

    void write_checks(std::ostringstream &s, const std::vector<Arg> &args) const {
        for (const auto &a : args) {
            const std::string type = dsl::print_type(g_, g_.node(a.value).type);
            const auto ds = dims(a.value);
            const int rank = std::max<int>(1, (int)ds.size());
            s << "    if (!" << a.c << " || !" << a.c << "->host) return fail(1, \"argument " << a.c << " (" << type
              << ") is null or has no host memory\");\n";
            s << "    if (" << a.c << "->dimensions != " << rank << ") return fail(1, \"argument " << a.c << " has %d dimensions; "
              << type << " needs " << rank << "\", " << a.c << "->dimensions);\n";
            s << "    if (" << a.c << "->type.code != halide_type_float || " << a.c << "->type.bits != 32 || " << a.c
              << "->type.lanes != 1) return fail(1, \"argument " << a.c << " is not f32 (" << type << ")\");\n";
            for (size_t ax = 0; ax < ds.size(); ax++) {
                const std::string ext = a.c + "->dim[" + std::to_string(ds.size() - 1 - ax) + "].extent";
                if (ds[ax].is_static()) {
                    s << "    if (" << ext << " != " << ds[ax].size << ") return fail(1, \"argument " << a.c << ": extent %d in axis "
                      << ax << ", the graph declares " << type << "\", " << ext << ");\n";
                } else {
                    const std::string sym = "*sym_" + identifier(ds[ax].symbol);
                    s << "    if (" << ext << " < 1) return fail(1, \"argument " << a.c << ": extent %d in axis " << ax << "\", " << ext << ");\n";
                    s << "    if (" << sym << " < 0) " << sym << " = " << ext << ";\n";
                    s << "    else if (" << sym << " != " << ext << ") return fail(1, \"argument " << a.c << ": extent %d in axis " << ax
                      << " (" << ds[ax].symbol << "), but " << ds[ax].symbol << " = %lld from an earlier argument; the graph declares "
                      << type << "\", " << ext << ", (long long)" << sym << ");\n";
                }
            }
        }
        // Density last, so that a wrong extent is reported as such rather than as odd strides.
        for (const auto &a : args) {
            const int rank = std::max<int>(1, (int)g_.node(a.value).type.rank());
            s << "    { int64_t stride = 1; for (int d = 0; d < " << rank << "; d++) { if (" << a.c << "->dim[d].stride != stride) return fail(1, \"argument "
              << a.c << " is not dense (dimension %d has stride %d, expected %lld)\", d, " << a.c << "->dim[d].stride, (long long)stride); stride *= "
              << a.c << "->dim[d].extent; } }\n";
        }
    }

    /** C expressions of v's physical extents (outermost first; dsl/ir/Layout.h), symbols read
     * through `sym` ("*sym_" inside a plan function, "sym_" in an entry). */
    std::vector<std::string> physical_extents(ValueId v, const std::string &sym) const {
        const auto ds = dims(v);
        std::vector<std::string> out;
        for (const dsl::PhysicalDim &p : dsl::physical_dims(g_.node(v).layout, (int)ds.size())) {
            const dsl::Dim &d = ds[(size_t)p.axis];
            const std::string e = d.is_static() ? std::to_string(d.size) + "LL" : sym + identifier(d.symbol);
            const std::string w = std::to_string(p.width) + "LL";
            out.push_back(p.part == dsl::PhysicalDim::Part::Whole ? e : p.part == dsl::PhysicalDim::Part::InPanel ? w
                                                                                                       : "((" + e + " + " + w + " - 1) / " + w + ")");
        }
        return out;
    }
    /** "halide_type_float, 32": v's storage type for dense(). */
    std::string type_args(ValueId v) const {
        switch (g_.node(v).type.dtype) {
        case dsl::DType::BF16: return "halide_type_bfloat, 16";
        case dsl::DType::F16: return "halide_type_float, 16";
        default: return "halide_type_float, 32";
        }
    }
    /** Statements setting `target` to v's bytes (overflow checked), rounded up to 64. */
    void write_bytes(std::ostringstream &s, const std::string &target, ValueId v) const {
        s << "    { int64_t b_ = " << dsl::byte_size(g_.node(v).type.dtype) << ";\n";
        for (const std::string &e : physical_extents(v, "*sym_"))
            s << "      if (__builtin_mul_overflow(b_, " << e << ", &b_)) return fail(1, \"the sizes overflow int64\");\n";
        s << "      b_ = (b_ + 63) / 64 * 64;\n      if (b_ > " << target << ") " << target << " = b_; }\n";
    }

    void write_sizes(std::ostringstream &s, const dsl::BufferAssignment &memory) const {
        const size_t n = memory.allocations.size();
        s << "    int64_t bytes[" << std::max<size_t>(n, 1) << "];\n";
        for (size_t k = 0; k < n; k++) {
            s << "    bytes[" << k << "] = 0;\n";
            for (ValueId v : memory.allocations[k].values) write_bytes(s, "bytes[" + std::to_string(k) + "]", v);
        }
        s << "    static const unsigned char conflicts[" << std::max<size_t>(n * n, 1) << "] = {";
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++) {
                const auto &x = memory.allocations[i], &y = memory.allocations[j];
                s << (i == j ? 0 : x.first_step <= y.last_step && y.first_step <= x.last_step) << (i + 1 == n && j + 1 == n ? "" : ",");
            }
        s << "};\n    (void)conflicts;\n";
        s << "    int order[" << std::max<size_t>(n, 1) << "];\n    (void)order;\n";
        s << "    *peak = " << (n ? "pack(" + std::to_string(n) + ", bytes, conflicts, offsets, order)" : "0") << ";\n";
    }

    /** `static int name(args..., int64_t *offsets, int64_t *peak, syms...)`: checks `args` and
     * places `memory`'s allocations; with no memory plan, places the prepared values one after
     * another in the prepared block instead (their sizes follow from the weights alone). */
    void write_plan_function(std::ostringstream &s, const std::string &name, const std::vector<Arg> &args,
                             const dsl::BufferAssignment *memory) const {
        s << "static int " << name << "(" << parameters_of(args) << "int64_t *offsets, int64_t *peak";
        for (const auto &sym : symbols_) s << ", int64_t *sym_" << identifier(sym);
        s << ") {\n";
        write_checks(s, args);
        if (memory) {
            write_sizes(s, *memory);
        } else {
            s << "    *peak = 0;\n";
            for (size_t i = 0; i < prepared_.size(); i++) {
                s << "    offsets[" << i << "] = *peak;\n    { int64_t size = 0;\n";
                write_bytes(s, "size", prepared_[i]);
                s << "      *peak += size; }\n";
            }
        }
        s << "    return 0;\n}\n\n";
    }

    /** TESSEL_LIB_PROFILE=FILE: calls counted per symbol binding, written at exit in the shape
     * profile form (autoscheduler/SpecializationPlanner.h), for `tessel specialize`. */
    void write_profile_recorder(std::ostringstream &s) const {
        const size_t n = std::max<size_t>(symbols_.size(), 1);
        s << "#include <pthread.h>\n#define PROFILE_SHAPES 1024\n"
          << "static int64_t profile_shape[PROFILE_SHAPES][" << n << "];\nstatic long long profile_calls[PROFILE_SHAPES];\n"
          << "static int profile_used = 0, profile_state = 0;  /* 0 undecided, 1 off, 2 on */\n"
          << "static pthread_mutex_t profile_lock = PTHREAD_MUTEX_INITIALIZER;\n"
          << "static void write_profile(void) {\n    FILE *f = fopen(getenv(\"TESSEL_LIB_PROFILE\"), \"w\");\n    if (!f) return;\n"
          << "    fprintf(f, \"# calls per shape of " << name_ << " (TESSEL_LIB_PROFILE)\\n\");\n"
          << "    for (int i = 0; i < profile_used; i++) {\n";
        size_t i = 0;
        for (const auto &sym : symbols_) s << "        fprintf(f, \"" << sym << "=%lld \", (long long)profile_shape[i][" << i++ << "]);\n";
        s << "        fprintf(f, \"calls=%lld\\n\", profile_calls[i]);\n    }\n    fclose(f);\n}\n"
          << "static void count_call(const int64_t *shape) {\n    pthread_mutex_lock(&profile_lock);\n"
          << "    if (profile_state == 0) {\n        const char *path = getenv(\"TESSEL_LIB_PROFILE\");\n"
          << "        profile_state = path && *path ? 2 : 1;\n        if (profile_state == 2) atexit(write_profile);\n    }\n"
          << "    if (profile_state == 2) {\n        int i = 0;\n"
          << "        while (i < profile_used && memcmp(profile_shape[i], shape, sizeof profile_shape[i])) i++;\n"
          << "        if (i == profile_used && profile_used < PROFILE_SHAPES) memcpy(profile_shape[profile_used++], shape, sizeof profile_shape[i]);\n"
          << "        if (i < profile_used) profile_calls[i]++;\n    }\n    pthread_mutex_unlock(&profile_lock);\n}\n\n";
    }

    void write_workspace_bytes(std::ostringstream &s, const std::string &suffix, const std::string &plan,
                               const dsl::BufferAssignment &memory) const {
        s << "int64_t " << name_ << suffix << "(" << parameters().substr(0, parameters().size() - 2) << ") {\n"
          << symbols_locals() << "    int64_t offsets[" << std::max<size_t>(memory.allocations.size(), 1) << "], peak = 0;\n"
          << "    if (" << plan << "(";
        for (const auto &a : args_) s << a.c << ", ";
        s << "offsets, &peak" << symbols_args() << ")) return -1;\n    return peak;\n}\n\n";
    }

    /** The best target the CPU supports, decided at the first call; TESSEL_LIB_ISA=<suffix>
     * selects a lower one (tests, benchmarks). -1: none. */
    void write_pick_isa(std::ostringstream &s) const {
        s << "static int pick_isa(void) {\n    static int isa = -1;\n    if (isa < 0) {\n        __builtin_cpu_init();\n"
             "        const char *want = getenv(\"TESSEL_LIB_ISA\");\n        if (want && !*want) want = NULL;\n";
        for (size_t t = 0; t < targets_.size(); t++)
            s << "        if (isa < 0 && (" << targets_[t].cpu_check << ") && (!want || !strcmp(want, \"" << targets_[t].suffix
              << "\"))) isa = " << t << ";\n";
        s << "    }\n    return isa;\n}\n\n";
    }

    /** Calls of the groups `entry` runs (prepared ones, per-call ones, or all), in plan order. */
    void write_dispatch(std::ostringstream &s, const TargetKernels &t, Entry entry, const dsl::BufferAssignment &memory) const {
        for (const auto &cg : t.program->groups()) {
            const CompiledKernel &k = *cg.kernel;
            if ((entry == Entry::Prepare && !k.group().prepared) || (entry == Entry::RunPrepared && k.group().prepared)) continue;
            if (is_view_group(k, memory)) {
                s << "    note_variant(\"" << k.group().name << "\", \"view\");\n";
                continue;
            }
            std::string call_args;
            for (const auto &a : k.arguments()) call_args += (call_args.empty() ? "" : ", ") + buffer_of(a.value);
            s << "    if (rc == 0) {\n";
            for (const auto &[ename, e] : k.extents().extents)
                s << "        const int64_t ext_" << ename << " = " << dim_expr(e.dim) << ";\n        (void)ext_" << ename << ";\n";
            for (size_t i = 0; i < k.variants().size(); i++) {
                const auto &v = k.variants()[i];
                std::string cond;
                for (const auto &gd : v.guards) {
                    const std::string x = "ext_" + gd.extent;
                    const std::string c = gd.op == "%" ? "(" + x + " % " + std::to_string(gd.value) + " == 0)"
                                                       : "(" + x + " " + gd.op + " " + std::to_string(gd.value) + ")";
                    cond += (cond.empty() ? "" : " && ") + c;
                }
                s << "        " << (i ? "else " : "") << (cond.empty() ? "" : "if (" + cond + ") ") << "{ rc = "
                  << k.variant_function(i, k.group().name + "_" + t.suffix) << "(" << call_args << "); note_variant(\""
                  << k.group().name << "\", \"" << v.label << " [" << t.suffix << "]\"); }\n";
            }
            s << "        if (rc != 0) fail(3, \"kernel " << k.group().name << " (" << t.suffix
              << ") failed (%d): %s\", rc, halide_message);\n    }\n";
        }
    }

    std::string buffer_of(ValueId v) const {
        for (const auto &a : args_)
            if (a.value == v) return a.c;
        return "&buf_" + std::to_string(v);
    }

    /** Descriptors of every value `memory` places (an operand's before a view of it): arena
     * offsets, views, in-place aliases and prepared values (in the prepared block `block`). */
    void write_descriptors(std::ostringstream &s, const dsl::BufferAssignment &memory, Entry entry) const {
        for (const auto &b : memory.buffers) {
            if (b.kind == dsl::LogicalBuffer::Kind::GraphInput || b.kind == dsl::LogicalBuffer::Kind::GraphOutput) continue;
            // The prepared groups read weights and prepared values only; they have no arena.
            if (entry == Entry::Prepare && b.kind != dsl::LogicalBuffer::Kind::Prepared) continue;
            const std::vector<std::string> ext = physical_extents(b.value, "sym_");
            const int rank = std::max<int>(1, (int)ext.size());
            const std::string id = std::to_string(b.value);
            s << "    halide_buffer_t buf_" << id << ";\n    halide_dimension_t dims_" << id << "[" << rank << "];\n";
            if (b.kind == dsl::LogicalBuffer::Kind::View && b.strided) {
                const dsl::Node &n = g_.node(b.value);
                const std::string src = buffer_of(b.shares_with);
                const int r = (int)n.attrs.perm.size();
                s << "    buf_" << id << " = *" << src << ";\n    buf_" << id << ".dim = dims_" << id << ";\n";
                for (int d = 0; d < r; d++)
                    s << "    dims_" << id << "[" << d << "] = " << src << "->dim[" << r - 1 - n.attrs.perm[r - 1 - d] << "];\n";
                continue;
            }
            s << "    { const int64_t extents_[" << rank << "] = {";
            for (int d = 0; d < rank; d++) s << (d ? ", " : "") << (ext.empty() ? std::string("1") : ext[ext.size() - 1 - d]);
            s << "};\n      dense(&buf_" << id << ", dims_" << id << ", " << rank << ", extents_, ";
            if (b.kind == dsl::LogicalBuffer::Kind::Arena) {
                s << "arena + offsets[" << b.allocation << "]";
            } else if (b.kind == dsl::LogicalBuffer::Kind::Prepared) {
                const size_t i = (size_t)(std::find(prepared_.begin(), prepared_.end(), b.value) - prepared_.begin());
                s << "block + poffsets[" << i << "]";
            } else {
                s << buffer_of(b.shares_with) << "->host";
            }
            s << ", " << type_args(b.value) << "); }\n";
        }
    }

    /** The whole-graph entry, the prepare-weights entry or the entry that reads prepared weights. */
    void write_entry(std::ostringstream &s, Entry entry) const {
        const bool prepare = entry == Entry::Prepare;
        const dsl::BufferAssignment &memory = entry == Entry::Whole ? memory_ : *kept_;
        const std::vector<Arg> &args = prepare ? weights_ : args_;
        s << "int " << name_ << (prepare ? "_prepare(" : entry == Entry::RunPrepared ? "_run_prepared(" : "(") << parameters_of(args)
          << (prepare ? "void *prepared, int64_t prepared_bytes" : entry == Entry::RunPrepared ? "const void *prepared, void *workspace, int64_t workspace_bytes"
                                                                                              : "void *workspace, int64_t workspace_bytes")
          << ") {\n    error_text[0] = 0;\n    variants_text[0] = 0;\n" << symbols_locals()
          << "    int64_t offsets[" << std::max<size_t>(memory.allocations.size(), 1) << "], peak = 0;\n"
          << "    int64_t poffsets[" << std::max<size_t>(prepared_.size(), 1) << "], ptotal = 0;\n    (void)poffsets;\n    (void)ptotal;\n";
        if (!prepare) {
            s << "    if (int rc = " << (entry == Entry::Whole ? "plan_call(" : "plan_kept(");
            for (const auto &a : args_) s << a.c << ", ";
            s << "offsets, &peak" << symbols_args() << ")) return rc;\n";
        }
        if (entry != Entry::Whole) {
            s << "    if (int rc = plan_prepared(";
            for (const auto &a : weights_) s << a.c << ", ";
            s << "poffsets, &ptotal" << symbols_args() << ")) return rc;\n";
            s << "    if (!prepared || ((uintptr_t)prepared & 63)" << (prepare ? " || prepared_bytes < ptotal" : "")
              << ") return fail(2, \"the prepared block at %p " << (prepare ? "holds %lld bytes; these weights need %lld bytes" : "is null or")
              << ", 64-byte aligned\", prepared" << (prepare ? ", (long long)prepared_bytes, (long long)ptotal" : "") << ");\n"
              << "    uint8_t *block = (uint8_t *)prepared;\n    (void)block;\n";
        }
        if (!symbols_.empty() && entry != Entry::Prepare) {
            s << "    { const int64_t shape[" << symbols_.size() << "] = {";
            size_t i = 0;
            for (const auto &sym : symbols_) s << (i++ ? ", " : "") << "sym_" << identifier(sym);
            s << "};\n      count_call(shape); }\n";
        }
        s << "    void *owned = NULL;\n";
        if (!prepare)
            s << "    if (!workspace && peak > 0) {\n"
              << "        owned = aligned_alloc(64, (size_t)peak);\n"
              << "        if (!owned) return fail(2, \"cannot allocate a workspace of %lld bytes\", (long long)peak);\n"
              << "        workspace = owned;\n        workspace_bytes = peak;\n    }\n"
              << "    if (workspace_bytes < peak || ((uintptr_t)workspace & 63)) return fail(2, \"the workspace holds %lld bytes at %p; "
                 "this call needs %lld bytes, 64-byte aligned\", (long long)workspace_bytes, workspace, (long long)peak);\n"
              << "    uint8_t *arena = (uint8_t *)workspace;\n    (void)arena;\n";
        write_descriptors(s, memory, entry);
        s << "    const int isa = pick_isa();\n    if (isa < 0) { free(owned); return fail(3, \"this CPU supports none of the library's targets (";
        for (size_t t = 0; t < targets_.size(); t++) s << (t ? ", " : "") << targets_[t].target;
        s << ")%s\", getenv(\"TESSEL_LIB_ISA\") ? \" allowed by TESSEL_LIB_ISA\" : \"\"); }\n";
        s << "    halide_error_handler_t previous = halide_set_error_handler(capture_halide_error);\n"
             "    halide_do_par_for_t previous_par_for = halide_set_custom_do_par_for(openmp_do_par_for);\n    int rc = 0;\n";
        for (size_t t = 0; t < targets_.size(); t++) {
            s << "    " << (t ? "else " : "") << "if (isa == " << t << ") {\n";
            write_dispatch(s, targets_[t], entry, memory);
            s << "    }\n";
        }
        s << "    halide_set_custom_do_par_for(previous_par_for);\n    halide_set_error_handler(previous);\n    free(owned);\n    return rc ? 3 : 0;\n}\n\n";
    }
};

/** "x86-multi" = AVX-512 (Skylake set), AVX2 + FMA, and baseline x86-64; else a comma list. */
std::vector<Halide::Target> library_targets(const std::string &text) {
    std::vector<Halide::Target> out;
    if (text == "x86-multi") {
        for (const char *t : {"x86-64-linux-avx-avx2-avx512-avx512_skylake-f16c-fma-sse41", "x86-64-linux-avx-avx2-f16c-fma-sse41",
                              "x86-64-linux"})
            out.push_back(parse_target(t));
        return out;
    }
    std::stringstream ss(text);
    for (std::string t; std::getline(ss, t, ',');) out.push_back(parse_target(t));
    if (out.empty()) throw std::invalid_argument("tessel lib: no target given");
    return out;
}

using Feature = Halide::Target::Feature;

/** The x86 features a target's code may need, with __builtin_cpu_supports' names for them. */
const std::pair<Feature, std::vector<const char *>> kCpuFeatures[] = {
    {Feature::SSE41, {"sse4.1"}}, {Feature::AVX, {"avx"}}, {Feature::AVX2, {"avx2"}}, {Feature::FMA, {"fma"}},
    {Feature::F16C, {"f16c"}}, {Feature::AVX512, {"avx512f", "avx512cd"}},
    {Feature::AVX512_Skylake, {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}},
    {Feature::AVX512_Cannonlake, {"avx512ifma", "avx512vbmi"}}, {Feature::AVX512_Zen4, {"avx512bf16", "avx512vnni"}},
};

/** The CPU features a target's code needs, as a condition on __builtin_cpu_supports, and a
 * short name for its kernels' suffix. */
std::pair<std::string, std::string> cpu_requirements(const Halide::Target &t) {
    std::set<std::string> features;
    for (const auto &[f, names] : kCpuFeatures)
        if (t.has_feature(f)) features.insert(names.begin(), names.end());
    std::string check = "1";
    for (const auto &f : features) check += " && __builtin_cpu_supports(\"" + f + "\")";
    const std::string suffix = t.has_feature(Feature::AVX512) ? "avx512" : t.has_feature(Feature::AVX2) ? "avx2"
                               : t.has_feature(Feature::AVX) ? "avx" : t.has_feature(Feature::SSE41) ? "sse41" : "x86_64";
    return {check, suffix};
}

/** Whether this machine runs `t`'s code (the planner measures on the best such target). */
bool host_runs(const Halide::Target &t) {
    const Halide::Target host = Halide::get_host_target();
    for (const auto &[f, names] : kCpuFeatures)
        if (t.has_feature(f) && !host.has_feature(f)) return false;
    return true;
}

/** The profile's shapes must bind exactly the graph's symbols. */
void check_profile_symbols(const autosched::ShapeProfile &profile, const std::set<std::string> &symbols,
                           const std::string &file) {
    for (const auto &e : profile) {
        for (const auto &[name, size] : e.shape)
            if (!symbols.count(name))
                throw std::invalid_argument(file + ": shape " + autosched::format_extents(e.shape) + " binds '" + name +
                                            "', which is not a symbol of the graph");
        for (const auto &sym : symbols)
            if (!e.shape.count(sym))
                throw std::invalid_argument(file + ": shape " + autosched::format_extents(e.shape) + " does not bind the graph's symbol " + sym);
    }
}

/** Measures every group's variants on the profile (on the best target this machine runs), plans
 * under the budgets and returns, by group, the indices of the variants to keep. Prints the
 * measured costs and the plan; throws std::invalid_argument for a plan over budget. */
std::map<std::string, std::vector<size_t>> plan_library_variants(const dsl::Graph &g, const CompiledGraph &program,
                                                                 const autosched::ShapeProfile &profile,
                                                                 const Halide::Target &measure_on,
                                                                 const std::vector<Halide::Target> &code_targets,
                                                                 const KernelLibraryOptions &o, std::ostream &out) {
    VariantMeasureOptions mo;
    mo.measure_on = measure_on.without_feature(Feature::NoRuntime);
    mo.code_targets = code_targets;
    mo.compile_cost = CompileCost::AheadOfTime;
    mo.repeats = o.repeats;
    out << "specialization: " << profile.size() << " profiled shape(s) from " << o.profile_file << "; measured on "
        << mo.measure_on.to_string() << " (" << o.repeats << " interleaved rounds), code and compile time for "
        << code_targets.size() << " target(s), compile amortized over " << o.budgets.compiles_amortized_over << " run(s)\n";
    std::vector<autosched::KernelChoices> kernels;
    for (const auto &cg : program.groups()) {
        const CompiledKernel &k = *cg.kernel;
        const GroupVariantCosts c = measure_group_variants(g, k.group(), k.schedule(), profile, mo, k.group().name);
        kernels.push_back({k.group().name, c.candidates, c.fallback});
        for (const auto *v : [&] {
                 std::vector<const autosched::VariantCosts *> all;
                 for (const auto &x : kernels.back().candidates) all.push_back(&x);
                 all.push_back(&kernels.back().fallback);
                 return all;
             }()) {
            out << "  " << v->name << " [" << v->guards_text() << "]: compile " << v->compile_seconds << " s, code " << v->code_bytes
                << " B;";
            for (const auto &[shape, sec] : v->seconds_per_call) out << " " << autosched::format_extents(shape) << ": " << sec * 1e3 << " ms;";
            out << "\n";
        }
    }
    const autosched::SpecializationPlan plan = autosched::plan_specializations(profile, kernels, o.budgets);
    out << plan.to_string(kernels);
    if (!plan.feasible) throw std::invalid_argument("tessel lib: " + plan.infeasible_reason);
    std::map<std::string, std::vector<size_t>> kept;
    for (size_t k = 0; k < kernels.size(); k++) kept[kernels[k].kernel] = plan.chosen[k];
    return kept;
}

}  // namespace

int write_kernel_library(const KernelLibraryOptions &o, std::ostream &out) {
    const std::vector<Halide::Target> targets = library_targets(o.target);
    const Halide::Target target = targets.front();
    for (const auto &t : targets)
        if (t.has_gpu_feature() || t.arch != Halide::Target::X86)
            throw std::invalid_argument("tessel lib builds x86 CPU libraries; " + t.to_string() + " is not one");
    // The same phases as tessel compile and run (layout conversions included), for the first target.
    PlanOptions plan_options;
    plan_options.symbols = o.symbols;
    plan_options.remat = o.remat;
    plan_options.schedules.user_schedule = o.schedule;
    plan_options.schedules.db = o.db;
    const PlannedProgram planned_graph = plan_file(o.file, target, plan_options);
    const dsl::Graph &g = planned_graph.graph;
    const dsl::FusionPlan &plan = planned_graph.fusion;
    const std::map<std::string, int64_t> &sizes = planned_graph.sizes;
    const std::string name = identifier(o.name.empty() ? g.name : o.name);
    if (planned_graph.remat && planned_graph.remat->changed) out << planned_graph.remat->to_string();
    if (planned_graph.layouts.conversions > 0) out << planned_graph.layouts.to_string(g);
    if (!plan.outside_kernels.empty())
        throw std::invalid_argument("tessel lib: " + dsl::print_node(g, plan.outside_kernels.front()) +
                                    " runs outside kernels; a library holds graphs whose every op is in a kernel");
    std::set<ValueId> seen;
    for (ValueId v : g.outputs)
        if (!seen.insert(v).second || g.node(v).op == dsl::Op::Input)
            throw std::invalid_argument("tessel lib: output %" + g.display_name(v) +
                                        " is bound twice or is a graph input (the library would need a copy)");
    // The entry's buffers (inputs, weights, outputs) are f32 row-major; values inside (prepared
    // ones included) may have any layout and storage type: the entry describes them itself.
    for (ValueId v : g.order()) {
        const dsl::Node &n = g.node(v);
        if (!n.has_result() || !dsl::is_float(n.type.dtype) || (n.op != dsl::Op::Input && !g.is_output(v))) continue;
        if (!n.layout.empty() || n.type.dtype != dsl::DType::F32)
            throw std::invalid_argument("tessel lib: " + dsl::print_node(g, v) +
                                        ": a library's input, weight and output buffers are f32 row-major (layouts and "
                                        "f16/bf16 storage of those are compiled by the JIT only, tessel run)");
    }

    // The same plan compiled for every target, each with that target's schedules; with a
    // profile, each group keeps the variants the planner chose (by index: a library schedule
    // has the same variants, guards included, on every x86 target).
    const std::map<std::string, std::vector<size_t>> *kept = nullptr;
    // One plan; each target's schedules by the same policy (user, database, library).
    std::vector<std::vector<ScheduleChoice>> choices = {planned_graph.schedules};
    for (size_t ti = 1; ti < targets.size(); ti++) choices.push_back(select_schedules(planned_graph, targets[ti], plan_options.schedules));
    auto build_programs = [&] {
        std::vector<std::unique_ptr<CompiledGraph>> built;
        for (size_t ti = 0; ti < targets.size(); ti++) {
            const Halide::Target &t = targets[ti];
            const ScheduleChooser choose = [&, ti](const dsl::FusionGroup &fg,
                                                    const lower::LoweredGroup &) -> std::optional<sched::ScheduleSpec> {
                for (size_t i = 0; i < plan.groups.size(); i++) {
                    if (plan.groups[i].name != fg.name) continue;
                    sched::ScheduleSpec s = choices[ti][i].spec;
                    if (kept) s = s.keeping_variants(kept->count(fg.name) ? kept->at(fg.name) : std::vector<size_t>{});
                    return s;
                }
                return std::nullopt;
            };
            built.push_back(std::make_unique<CompiledGraph>(g, plan, t.with_feature(Halide::Target::NoRuntime), choose,
                                                            KernelBackend::AheadOfTime));
        }
        return built;
    };
    std::vector<std::unique_ptr<CompiledGraph>> programs = build_programs();
    std::map<std::string, std::vector<size_t>> planned;
    autosched::ShapeProfile profile;
    std::ostringstream plan_report;  // also written to <name>.plan.txt
    if (!o.profile_file.empty()) {
        profile = autosched::parse_shape_profile(read_text_file(o.profile_file), o.profile_file);
        if (profile.empty()) throw std::invalid_argument(o.profile_file + ": the profile has no shapes");
        std::set<std::string> symbols;
        for (ValueId v : g.order())
            for (const auto &d : g.node(v).type.dims)
                if (d.kind == dsl::Dim::Kind::Symbol) symbols.insert(d.symbol);
        check_profile_symbols(profile, symbols, o.profile_file);
        size_t measure = 0;
        while (measure < targets.size() && !host_runs(targets[measure])) measure++;
        if (measure == targets.size())
            throw std::invalid_argument("tessel lib --profile: this machine runs none of the targets, so it cannot measure them");
        planned = plan_library_variants(g, *programs[measure], profile, targets[measure], targets, o, plan_report);
        kept = &planned;
        programs = build_programs();
    }
    std::vector<EntryWriter::TargetKernels> kernels;
    std::set<std::string> suffixes;
    for (size_t i = 0; i < targets.size(); i++) {
        auto [check, suffix] = cpu_requirements(targets[i]);
        while (!suffixes.insert(suffix).second) suffix += "_";
        kernels.push_back({suffix, check, targets[i].to_string(), programs[i].get()});
    }
    const CompiledGraph &program = *programs.front();
    // The whole-graph entry computes the prepared values every call (they take arena space); the
    // prepare-weights entries keep them in the caller's prepared block.
    ArenaOptions every_call;
    every_call.keep_prepared = false;
    const dsl::BufferAssignment memory = program.memory_plan(sizes, every_call);
    std::optional<dsl::BufferAssignment> kept_prepared;
    if (std::any_of(plan.groups.begin(), plan.groups.end(), [](const dsl::FusionGroup &fg) { return fg.prepared; }))
        kept_prepared = program.memory_plan(sizes);
    // What the generated dispatcher will report for each profiled shape (its _variants()).
    for (const auto &e : profile) {
        plan_report << "dispatch at " << autosched::format_extents(e.shape) << ":";
        const std::map<std::string, int64_t> symbols(e.shape.begin(), e.shape.end());
        for (const auto &cg : program.groups()) {
            const CompiledKernel &k = *cg.kernel;
            if (is_view_group(k, memory)) continue;
            const auto ext = k.extents().concrete(symbols);
            plan_report << " " << k.group().name << "=" << k.variants()[k.pick_variant({ext->begin(), ext->end()})].label << ";";
        }
        plan_report << "\n";
    }
    out << plan_report.str();

    const fs::path dir = o.out_dir, work = dir / (name + ".objects");
    fs::create_directories(work);
    if (!profile.empty()) std::ofstream(dir / (name + ".plan.txt")) << plan_report.str();
    std::vector<fs::path> objects;
    for (size_t ti = 0; ti < kernels.size(); ti++)
        for (size_t gi = 0; gi < kernels[ti].program->groups().size(); gi++) {
            const auto &t = kernels[ti];
            const CompiledGraph::Group &cg = t.program->groups()[gi];
            out << "group " << cg.kernel->group().name << " [" << dsl::to_string(cg.kernel->group().kind) << "] for " << t.suffix
                << ": " << choices[ti][gi].label() << ", " << cg.kernel->variants().size() << " variant(s)\n";
            for (const auto &f : cg.kernel->write_files(work, cg.kernel->group().name + "_" + t.suffix, {AotOutput::Object, AotOutput::Header}))
                if (f.extension() == ".o") objects.push_back(f);
        }
    // One runtime, for the least capable target, so that it runs wherever any target does.
    objects.push_back(work / "halide_runtime.o");
    Halide::compile_standalone_runtime(objects.back().string(), targets.back().without_feature(Halide::Target::NoRuntime));

    EntryWriter entry(g, plan, kernels, memory, kept_prepared ? &*kept_prepared : nullptr, name);
    std::ofstream(dir / (name + ".h")) << entry.header();
    std::ofstream(work / (name + "_entry.cpp")) << entry.source();
    std::ofstream(work / "tessel_parallel_loop.h") << kParallelLoopHeader;
    fs::copy_file(fs::path(TESSEL_HALIDE_INCLUDE_DIR) / "HalideRuntime.h", dir / "HalideRuntime.h",
                  fs::copy_options::overwrite_existing);
    objects.push_back(work / (name + "_entry.o"));
    run_or_throw(std::string(TESSEL_CXX) + " -std=c++17 -O2 -fPIC -fopenmp -fno-exceptions -fno-rtti -c '" + (work / (name + "_entry.cpp")).string() + "' -I'" +
                     dir.string() + "' -I'" + work.string() + "' -o '" + objects.back().string() + "'",
                 "compiling the generated entry");
    const fs::path lib = dir / ("lib" + name + ".a");
    fs::remove(lib);
    std::string ar = "ar rcs '" + lib.string() + "'";
    for (const auto &f : objects) ar += " '" + f.string() + "'";
    run_or_throw(ar, "archiving the library");
    out << "memory plan: " << memory.allocations.size() << " allocation(s), arena packed per call (" << dsl::format_bytes(memory.planned_peak)
        << " at the planning sizes)\n";
    out << "wrote " << lib.string() << "\nwrote " << (dir / (name + ".h")).string() << "\nwrote "
        << (dir / "HalideRuntime.h").string() << "\n"
        << (profile.empty() ? "" : "wrote " + (dir / (name + ".plan.txt")).string() + "\n")
        << "link: c++ app.cpp -I" << dir.string() << " " << lib.string() << " -lgomp -lpthread -ldl -lm\n";
    return 0;
}

}  // namespace tessel
