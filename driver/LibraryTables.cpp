// The generated header and the entry's tables over the C runtime (see LibraryTables.h).
#include "driver/LibraryTables.h"

#include "dsl/ir/Layout.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"
#include "tessel_runtime.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>
#include <stdexcept>

namespace tessel {

using dsl::ValueId;

std::string library_identifier(const std::string &s) {
    static const std::set<std::string> keywords = {"auto",
                                                   "bool",
                                                   "break",
                                                   "case",
                                                   "char",
                                                   "class",
                                                   "const",
                                                   "continue",
                                                   "default",
                                                   "delete",
                                                   "do",
                                                   "double",
                                                   "else",
                                                   "enum",
                                                   "extern",
                                                   "float",
                                                   "for",
                                                   "goto",
                                                   "if",
                                                   "inline",
                                                   "int",
                                                   "long",
                                                   "new",
                                                   "operator",
                                                   "private",
                                                   "public",
                                                   "register",
                                                   "restrict",
                                                   "return",
                                                   "short",
                                                   "signed",
                                                   "sizeof",
                                                   "static",
                                                   "struct",
                                                   "switch",
                                                   "template",
                                                   "this",
                                                   "throw",
                                                   "try",
                                                   "typedef",
                                                   "union",
                                                   "unsigned",
                                                   "using",
                                                   "virtual",
                                                   "void",
                                                   "volatile",
                                                   "while",
                                                   "workspace",
                                                   "workspace_bytes",
                                                   "prepared",
                                                   "prepared_bytes",
                                                   "arena",
                                                   "owned",
                                                   "peak",
                                                   "offsets",
                                                   "rc",
                                                   "previous"};
    std::string out;
    for (char c : s) out += std::isalnum((unsigned char)c) ? c : '_';
    if (out.empty() || std::isdigit((unsigned char)out[0])) out = "v" + out;
    // The generated entries' own names start with these prefixes.
    if (keywords.count(out) || out.rfind("sym_", 0) == 0 || out.rfind("buf_", 0) == 0 || out.rfind("dims_", 0) == 0) out += "_";
    return out;
}

bool is_view_group(const CompiledKernel &k, const dsl::BufferAssignment &memory) {
    for (const auto &a : k.arguments())
        if (const auto *b = memory.buffer(a.value); a.is_output && b && b->kind == dsl::LogicalBuffer::Kind::View) return true;
    return false;
}

namespace {

/** A C string literal. */
std::string quoted(const std::string &s) {
    std::string out = "\"";
    for (char c : s) out += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
    return out + "\"";
}

/** `static const T name[] = {elements};` into s, returning name; "nullptr" (and nothing
 * written) when there are no elements. */
std::string array(std::ostream &s, const std::string &type, const std::string &name, const std::vector<std::string> &elements) {
    if (elements.empty()) return "nullptr";
    s << "static const " << type << " " << name << "[] = {";
    for (size_t i = 0; i < elements.size(); i++) s << (i ? ", " : "") << elements[i];
    s << "};\n";
    return name;
}

std::string type_code(dsl::DType t) {
    return t == dsl::DType::BF16 ? "halide_type_bfloat" : t == dsl::DType::I8 ? "halide_type_int" : "halide_type_float";
}
int type_bits(dsl::DType t) { return dsl::byte_size(t) * 8; }

}  // namespace

LibraryTables::LibraryTables(const dsl::Graph &g, std::vector<LibraryTarget> targets, const dsl::BufferAssignment &memory,
                             const dsl::BufferAssignment *kept, std::string name)
    : g_(g), targets_(std::move(targets)), memory_(memory), kept_(kept), name_(std::move(name)) {
    for (ValueId v : g.order())
        if (g.node(v).op == dsl::Op::Input) {
            args_.push_back({v, library_identifier(g.display_name(v)), false});
            if (g.node(v).attrs.weight) weights_.push_back(args_.back());
        }
    for (size_t i = 0; i < g.outputs.size(); i++) args_.push_back({g.outputs[i], library_identifier(g.output_name(i)), true});
    for (const auto &a : args_) slots_.push_back(a.value);
    std::set<ValueId> seen(slots_.begin(), slots_.end());
    for (const dsl::BufferAssignment *m : {&memory_, kept_})
        if (m)
            for (const auto &b : m->buffers)
                if (b.kind != dsl::LogicalBuffer::Kind::GraphInput && b.kind != dsl::LogicalBuffer::Kind::GraphOutput &&
                    seen.insert(b.value).second)
                    slots_.push_back(b.value);
    if (kept_)
        for (const auto &b : kept_->buffers)
            if (b.kind == dsl::LogicalBuffer::Kind::Prepared) prepared_.push_back(b.value);
    std::set<std::string> symbols;
    for (ValueId v : g.order())
        for (const auto &d : g.node(v).type.dims)
            if (d.kind == dsl::Dim::Kind::Symbol) symbols.insert(d.symbol);
    symbols_.assign(symbols.begin(), symbols.end());
}

std::string LibraryTables::parameters_of(const std::vector<Arg> &args) const {
    std::string p;
    for (const auto &a : args) p += "struct halide_buffer_t *" + a.c + ", ";
    return p;
}

std::vector<dsl::Dim> LibraryTables::dims(ValueId v) const {
    std::vector<dsl::Dim> out;
    for (const auto &d : g_.node(v).type.dims) {
        const dsl::Dim r = dsl::resolve_dim(g_, d);
        if (!r.is_static() && r.kind != dsl::Dim::Kind::Symbol)
            throw std::invalid_argument("tessel lib: " + dsl::print_node(g_, v) + " has an extent computed by shape code");
        out.push_back(r);
    }
    return out;
}

/** `{size, symbol}` of a tessel_dim. */
std::string LibraryTables::dim_entry(const dsl::Dim &d) const {
    if (d.is_static()) return "{" + std::to_string(d.size) + "LL, -1}";
    const auto it = std::find(symbols_.begin(), symbols_.end(), d.symbol);
    if (d.kind != dsl::Dim::Kind::Symbol || it == symbols_.end())
        throw std::invalid_argument("tessel lib: an extent is neither static nor a symbol of the graph's buffers");
    return "{0, " + std::to_string(it - symbols_.begin()) + "}";
}

int LibraryTables::slot_of(ValueId v) const {
    const auto it = std::find(slots_.begin(), slots_.end(), v);
    if (it == slots_.end())
        throw std::logic_error("tessel lib: %" + g_.display_name(v) + " has no buffer in the library's tables");
    return (int)(it - slots_.begin());
}

std::string LibraryTables::header() const {
    std::ostringstream h;
    const std::string all = parameters_of(args_), listed = all.substr(0, all.size() - 2);
    h << "// Generated by `tessel lib`: graph " << g_.name << ", whole-graph entry. Do not edit.\n"
      << "#pragma once\n#include <stdint.h>\n#include \"HalideRuntime.h\"\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
    h << "/* Arguments, in order (a rank-0 tensor is a 1-D buffer of extent 1; all dense, min 0, of the element type shown):\n";
    for (const auto &a : args_) {
        const dsl::Node &n = g_.node(a.value);
        h << " *   " << (a.output ? "output " : "input  ") << a.c << " : " << dsl::print_type(g_, n.type);
        if (a.output && n.op == dsl::Op::UpdateTail)
            h << "  (" << library_identifier(g_.display_name(n.inputs[0])) << " with its last positions written"
              << (cache_write_refusals.count(a.value) ? "; a separate buffer" : "; pass the same buffer to update it in place")
              << ")";
        h << "\n";
    }
    h << " * Returns 0, or 1 (bad argument), 2 (workspace), 3 (a kernel failed); " << name_ << "_error() says what. */\n";
    h << "int " << name_ << "(" << all << "void *workspace, int64_t workspace_bytes);\n";
    h << "/* Bytes of workspace a call with these buffers needs (64-byte aligned); -1 on a bad argument. */\n";
    h << "int64_t " << name_ << "_workspace_bytes(" << listed << ");\n";
    if (!prepared_.empty()) {
        const std::string w = parameters_of(weights_);
        h << "/* Weights prepared once. The entry above computes the values derived from the weights alone on\n"
             " * every call; instead, prepare them once per weight change into a 64-byte aligned block of\n"
             " * "
          << name_ << "_prepared_bytes(weights) bytes with " << name_
          << "_prepare(weights, block, bytes),\n"
             " * then call "
          << name_
          << "_run_prepared(the entry's buffers, block, workspace, bytes), which\n"
             " * runs only the per-call kernels and reads the block (never writes it). Weights:";
        for (const auto &a : weights_) h << " " << a.c;
        h << ". */\n";
        h << "int64_t " << name_ << "_prepared_bytes(" << w.substr(0, w.size() - 2) << ");\n";
        h << "int " << name_ << "_prepare(" << w << "void *prepared, int64_t prepared_bytes);\n";
        h << "int " << name_ << "_run_prepared(" << all << "const void *prepared, void *workspace, int64_t workspace_bytes);\n";
        h << "/* Bytes of workspace " << name_ << "_run_prepared needs; -1 on a bad argument. */\n";
        h << "int64_t " << name_ << "_run_prepared_workspace_bytes(" << listed << ");\n";
    }
    h << "/* The last failure's message on this thread (\"\" after a success). */\nconst char *" << name_ << "_error(void);\n";
    h << "/* Which variant served each group in the last call on this thread. */\nconst char *" << name_ << "_variants(void);\n";
    h << "\n#ifdef __cplusplus\n}\n#endif\n";
    return h.str();
}

/** One tessel_value per slot: name, type, logical dims and physical dims. */
void LibraryTables::write_values(std::ostream &s) const {
    std::vector<std::string> values;
    for (size_t i = 0; i < slots_.size(); i++) {
        const ValueId v = slots_[i];
        const dsl::Node &n = g_.node(v);
        const auto ds = dims(v);
        std::vector<std::string> logical, physical;
        for (const auto &d : ds) logical.push_back(dim_entry(d));
        for (const dsl::PhysicalDim &p : dsl::physical_dims(n.layout, (int)ds.size()))
            physical.push_back("{" + std::to_string(p.axis) + ", " +
                               (p.part == dsl::PhysicalDim::Part::Whole     ? "TESSEL_AXIS_WHOLE"
                                : p.part == dsl::PhysicalDim::Part::InPanel ? "TESSEL_AXIS_IN_PANEL"
                                                                            : "TESSEL_AXIS_PANELS") +
                               ", " + std::to_string(p.width) + "LL}");
        const std::string id = std::to_string(i);
        const std::string l = array(s, "tessel_dim", "dims_" + id, logical),
                          p = array(s, "tessel_physical_dim", "physical_" + id, physical);
        const std::string name = i < args_.size() ? args_[i].c : g_.display_name(v);
        values.push_back("{" + quoted(name) + ", " + quoted(dsl::print_type(g_, n.type)) + ", " + type_code(n.type.dtype) + ", " +
                         std::to_string(type_bits(n.type.dtype)) + ", " + std::to_string(dsl::byte_size(n.type.dtype)) + ", " +
                         std::to_string(ds.size()) + ", " + l + ", " + std::to_string(physical.size()) + ", " + p + "}");
    }
    array(s, "tessel_value", "values", values);
}

/** `memory` as a tessel_memory_plan named `name`: live steps, values and the conflict table the
 * plan was packed with (live-range intersection for a plan packed by linear scan). */
void LibraryTables::write_plan(std::ostream &s, const std::string &name, const dsl::BufferAssignment &memory) const {
    const size_t n = memory.allocations.size();
    std::vector<std::string> first, last, begin{"0"}, values, conflicts;
    for (const auto &al : memory.allocations) {
        first.push_back(std::to_string(al.first_step));
        last.push_back(std::to_string(al.last_step));
        for (ValueId v : al.values) values.push_back(std::to_string(slot_of(v)));
        begin.push_back(std::to_string(values.size()));
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            const auto &x = memory.allocations[i], &y = memory.allocations[j];
            const bool c = memory.conflicts.size() == n * n
                               ? memory.conflicts[i * n + j] != 0
                               : i != j && x.first_step <= y.last_step && y.first_step <= x.last_step;
            conflicts.push_back(c ? "1" : "0");
        }
    const std::string f = array(s, "int", name + "_first", first), l = array(s, "int", name + "_last", last),
                      b = array(s, "int", name + "_begin", begin), v = array(s, "int", name + "_values", values),
                      c = array(s, "unsigned char", name + "_conflicts", conflicts);
    s << "static const tessel_memory_plan " << name << " = {" << n << ", " << f << ", " << l << ", " << b << ", " << v << ", "
      << c << "};\n";
}

/** Where an entry places each intermediate of `memory` (an operand's before a view of it). */
void LibraryTables::write_placements(std::ostream &s, const std::string &name, const dsl::BufferAssignment &memory,
                                     bool prepared_only) const {
    std::vector<std::string> rows;
    for (const auto &b : memory.buffers) {
        using K = dsl::LogicalBuffer::Kind;
        if (b.kind == K::GraphInput || b.kind == K::GraphOutput || (prepared_only && b.kind != K::Prepared)) continue;
        const std::string slot = std::to_string(slot_of(b.value));
        if (b.kind == K::View && b.strided) {
            const auto &perm = g_.node(b.value).attrs.perm;
            const int r = (int)perm.size();
            std::vector<std::string> p;
            for (int d = 0; d < r; d++) p.push_back(std::to_string(r - 1 - perm[(size_t)(r - 1 - d)]));
            const std::string pn = array(s, "int", name + "_perm_" + slot, p);
            rows.push_back("{" + slot + ", TESSEL_PLACE_STRIDED, " + std::to_string(slot_of(b.shares_with)) + ", " + pn + "}");
        } else if (b.kind == K::Arena) {
            rows.push_back("{" + slot + ", TESSEL_PLACE_ARENA, " + std::to_string(b.allocation) + ", nullptr}");
        } else if (b.kind == K::Prepared) {
            const size_t i = (size_t)(std::find(prepared_.begin(), prepared_.end(), b.value) - prepared_.begin());
            rows.push_back("{" + slot + ", TESSEL_PLACE_PREPARED, " + std::to_string(i) + ", nullptr}");
        } else {
            rows.push_back("{" + slot + ", TESSEL_PLACE_ALIAS, " + std::to_string(slot_of(b.shares_with)) + ", nullptr}");
        }
    }
    const std::string a = array(s, "tessel_placement", name, rows);
    s << "#define " << name << "_count " << rows.size() << "\n#define " << name << "_table " << a << "\n";
}

/** Target t's groups, in plan order: extents, kernel arguments, variants and their guards. */
std::string LibraryTables::write_groups(std::ostream &s, size_t t) const {
    const LibraryTarget &target = targets_[t];
    std::vector<std::string> groups;
    size_t gi = 0;
    for (const auto &cg : target.program->groups()) {
        const CompiledKernel &k = *cg.kernel;
        const std::string id = std::to_string(t) + "_" + std::to_string(gi++);
        std::vector<std::string> names, extents, arguments, variants, counts, guards;
        for (const auto &[ename, e] : k.extents().extents) {
            names.push_back(ename);
            extents.push_back(dim_entry(dsl::resolve_dim(g_, e.dim)));
        }
        std::string tail = "-1, 0, 0, {0, -1}, nullptr";
        for (const auto &a : k.arguments()) {
            const dsl::Node &n = g_.node(a.value);
            if (a.is_output && n.op == dsl::Op::UpdateTail) {
                const auto refused = cache_write_refusals.find(a.value);
                tail = std::to_string(arguments.size()) + ", " + std::to_string(slot_of(n.inputs[0])) + ", " +
                       std::to_string(n.attrs.axis) + ", " + dim_entry(dims(n.inputs[1])[(size_t)n.attrs.axis]) + ", " +
                       (refused == cache_write_refusals.end() ? "nullptr" : quoted(refused->second));
            }
            arguments.push_back(std::to_string(slot_of(a.value)));
        }
        for (size_t i = 0; i < k.variants().size(); i++) {
            const auto &v = k.variants()[i];
            const std::string fn = k.variant_function(i, k.group().name + "_" + target.suffix) + "_argv";
            variants.push_back("{" + fn + ", " + quoted(v.label) + "}");
            counts.push_back(std::to_string(v.guards.size()));
            for (const auto &gd : v.guards) {
                const auto at = std::find(names.begin(), names.end(), gd.extent);
                const int extent = at == names.end() ? -1 : (int)(at - names.begin());
                guards.push_back("{" + std::to_string(extent) + ", " + sched::runtime_name(gd.op) + ", " +
                                 std::to_string(gd.value) + "LL}");
            }
        }
        if (extents.size() > 64) throw std::invalid_argument("tessel lib: group " + k.group().name + " has more than 64 extents");
        const std::string e = array(s, "tessel_dim", "extents_" + id, extents), a = array(s, "int", "arguments_" + id, arguments),
                          v = array(s, "tessel_variant", "variants_" + id, variants),
                          c = array(s, "int", "guard_counts_" + id, counts),
                          gd = array(s, "tessel_guard", "guards_" + id, guards);
        groups.push_back("{" + quoted(k.group().name) + ", " + std::to_string(k.group().prepared ? 1 : 0) + ", " +
                         std::to_string(is_view_group(k, memory_) ? 1 : 0) + ", " +
                         std::to_string(kept_ && is_view_group(k, *kept_) ? 1 : 0) + ", " + std::to_string(extents.size()) +
                         ", " + e + ", " + std::to_string(arguments.size()) + ", " + a + ", " + std::to_string(variants.size()) +
                         ", " + v + ", " + c + ", " + gd + ", " + tail + "}");
    }
    return array(s, "tessel_group", "groups_" + std::to_string(t), groups);
}

int LibraryTables::max_rank() const {
    int r = 1;
    for (ValueId v : slots_) {
        const int rank = (int)g_.node(v).type.rank();
        r = std::max<int>({r, rank, (int)dsl::physical_dims(g_.node(v).layout, rank).size()});
    }
    return r;
}

/** The library's state, the per-thread texts, the call frame and the entry functions. */
void LibraryTables::write_entries(std::ostream &s) const {
    const size_t n_alloc = std::max<size_t>({memory_.allocations.size(), kept_ ? kept_->allocations.size() : 0, 1});
    size_t n_kernel_args = 1;
    for (const auto &t : targets_)
        for (const auto &cg : t.program->groups()) n_kernel_args = std::max(n_kernel_args, cg.kernel->arguments().size());
    const int max_rank = this->max_rank();
    const size_t n_sym = std::max<size_t>(symbols_.size(), 1), n_prep = std::max<size_t>(prepared_.size(), 1);
    s << "static int64_t profile_shapes[1024 * " << n_sym << "];\nstatic long long profile_calls[1024];\n"
      << "static void write_profile(void);\n"
      << "static tessel_library_state state = {-1, {" << quoted(name_) << ", " << symbols_.size() << ", "
      << (symbols_.empty() ? "nullptr" : "symbol_names") << ", 1024, 0, profile_shapes, profile_calls, 0}, write_profile};\n"
      << "static void write_profile(void) { tessel_profile_write_to_env_file(&state.profile); }\n"
      << "static __thread tessel_call_text text;\n"
      << "static void capture_halide_error(void *user_context, const char *msg) {\n    (void)user_context;\n"
      << "    snprintf(text.halide_message, sizeof text.halide_message, \"%s\", msg);\n}\n"
      << "/* Parallel loops on OpenMP, as in Tessel's JIT (tessel_parallel_loop.h). */\n"
      << "static int openmp_do_par_for(void *user_context, halide_task_t task, int min, int extent, uint8_t *closure) {\n"
      << "    return tessel_parallel::run_loop(user_context, task, min, extent, closure);\n}\n"
      << "/* Per-call storage of tessel_library_call. */\nstruct frame_storage {\n"
      << "    halide_buffer_t *slots[" << slots_.size() << "];\n    halide_buffer_t buffers[" << slots_.size() << "];\n"
      << "    halide_dimension_t dims[" << slots_.size() * (size_t)max_rank << "];\n    int64_t symbols[" << n_sym << "];\n"
      << "    int64_t bytes[" << n_alloc << "], offsets[" << n_alloc << "], prepared_offsets[" << n_prep << "];\n"
      << "    int64_t pack_scratch[(TESSEL_PACK_SCRATCH_BYTES(" << n_alloc << ") + 7) / 8];\n"
      << "    void *kernel_args[" << n_kernel_args << "];\n"
      << "    tessel_call_frame frame() { return {slots, buffers, dims, symbols, bytes, offsets, prepared_offsets, pack_scratch, kernel_args}; }\n};\n"
      << "static int call(int entry, halide_buffer_t *const *buf_args, void *prepared, int64_t prepared_bytes, void *workspace,\n"
      << "                int64_t workspace_bytes) {\n    frame_storage storage;\n    tessel_call_frame frame = storage.frame();\n"
      << "    halide_error_handler_t previous = halide_set_error_handler(capture_halide_error);\n"
      << "    halide_do_par_for_t previous_par_for = halide_set_custom_do_par_for(openmp_do_par_for);\n"
      << "    const int rc = tessel_library_call(&library, &state, entry, buf_args, prepared, prepared_bytes, workspace, workspace_bytes, &frame, &text);\n"
      << "    halide_set_custom_do_par_for(previous_par_for);\n    halide_set_error_handler(previous);\n    return rc;\n}\n"
      << "static int64_t bytes_of(int entry, halide_buffer_t *const *buf_args) {\n    frame_storage storage;\n"
      << "    tessel_call_frame frame = storage.frame();\n"
      << "    return entry == TESSEL_ENTRY_PREPARE ? tessel_library_prepared_bytes(&library, buf_args, &frame, &text)\n"
      << "                                         : tessel_library_workspace_bytes(&library, entry, buf_args, &frame, &text);\n}\n\n";
    auto list = [](const std::vector<Arg> &args) {
        std::string l;
        for (const auto &a : args) l += (l.empty() ? "" : ", ") + a.c;
        return l;
    };
    const std::string all = parameters_of(args_), listed = all.substr(0, all.size() - 2);
    const std::string buf_all = "    halide_buffer_t *const buf_args[] = {" + list(args_) + "};\n";
    s << "int " << name_ << "(" << all << "void *workspace, int64_t workspace_bytes) {\n"
      << buf_all << "    return call(TESSEL_ENTRY_WHOLE, buf_args, nullptr, 0, workspace, workspace_bytes);\n}\n";
    s << "int64_t " << name_ << "_workspace_bytes(" << listed << ") {\n"
      << buf_all << "    return bytes_of(TESSEL_ENTRY_WHOLE, buf_args);\n}\n";
    if (!prepared_.empty()) {
        const std::string w = parameters_of(weights_);
        const std::string buf_w = "    halide_buffer_t *const buf_args[] = {" + list(weights_) + "};\n";
        s << "int64_t " << name_ << "_prepared_bytes(" << w.substr(0, w.size() - 2) << ") {\n"
          << buf_w << "    return bytes_of(TESSEL_ENTRY_PREPARE, buf_args);\n}\n";
        s << "int " << name_ << "_prepare(" << w << "void *prepared, int64_t prepared_bytes) {\n"
          << buf_w << "    return call(TESSEL_ENTRY_PREPARE, buf_args, prepared, prepared_bytes, nullptr, 0);\n}\n";
        s << "int " << name_ << "_run_prepared(" << all << "const void *prepared, void *workspace, int64_t workspace_bytes) {\n"
          << buf_all
          << "    return call(TESSEL_ENTRY_RUN_PREPARED, buf_args, const_cast<void *>(prepared), 0, workspace, workspace_bytes);\n}\n";
        s << "int64_t " << name_ << "_run_prepared_workspace_bytes(" << listed << ") {\n"
          << buf_all << "    return bytes_of(TESSEL_ENTRY_RUN_PREPARED, buf_args);\n}\n";
    }
    s << "const char *" << name_ << "_error(void) { return text.error; }\n";
    s << "const char *" << name_ << "_variants(void) { return text.variants; }\n";
}

std::string LibraryTables::source() const {
    std::ostringstream s;
    s << "// Generated by `tessel lib` for graph " << g_.name << ". Do not edit. Tables over Tessel's C runtime\n"
      << "// (tessel_runtime.h), which checks the buffers, packs the workspace, dispatches and records the profile.\n"
      << "#include \"" << name_ << ".h\"\n";
    for (const auto &t : targets_)
        for (const auto &cg : t.program->groups())
            for (size_t i = 0; i < cg.kernel->variants().size(); i++)
                s << "#include \"" << cg.kernel->variant_function(i, cg.kernel->group().name + "_" + t.suffix) << ".h\"\n";
    s << "#include \"tessel_parallel_loop.h\"\n#include \"tessel_runtime.h\"\n#include <stdio.h>\n\n";
    std::vector<std::string> names;
    for (const auto &sym : symbols_) names.push_back(quoted(sym));
    array(s, "char *const", "symbol_names", names);
    write_values(s);
    std::vector<std::string> weights, prepared;
    for (const auto &w : weights_) weights.push_back(std::to_string(slot_of(w.value)));
    for (ValueId v : prepared_) prepared.push_back(std::to_string(slot_of(v)));
    const std::string wn = array(s, "int", "weights", weights), pn = array(s, "int", "prepared_slots", prepared);
    write_plan(s, "plan_whole", memory_);
    if (kept_) write_plan(s, "plan_kept", *kept_);
    write_placements(s, "place_whole", memory_, false);
    write_placements(s, "place_prepare", kept_ ? *kept_ : memory_, true);
    write_placements(s, "place_run_prepared", kept_ ? *kept_ : memory_, false);
    std::vector<std::string> targets, groups;
    std::string targets_text;
    for (size_t t = 0; t < targets_.size(); t++) {
        std::vector<std::string> features;
        for (const auto &f : targets_[t].features) features.push_back(quoted(f));
        const std::string fn = array(s, "char *const", "features_" + std::to_string(t), features);
        targets.push_back("{" + quoted(targets_[t].suffix) + ", " + quoted(targets_[t].target) + ", " +
                          std::to_string(features.size()) + ", " + fn + "}");
        targets_text += (t ? ", " : "") + targets_[t].target;
        groups.push_back(write_groups(s, t));
    }
    array(s, "tessel_target", "targets", targets);
    array(s, "tessel_group *const", "groups", groups);
    s << "static const tessel_library library = {" << quoted(name_) << ", " << symbols_.size() << ", "
      << (symbols_.empty() ? "nullptr" : "symbol_names") << ", " << slots_.size() << ", " << args_.size() << ", " << max_rank()
      << ", values, " << weights.size() << ", " << wn << ", &plan_whole, " << (kept_ ? "&plan_kept" : "nullptr") << ", "
      << prepared.size() << ", " << pn << ", {place_whole_count, place_prepare_count, place_run_prepared_count}, "
      << "{place_whole_table, place_prepare_table, place_run_prepared_table}, " << targets.size() << ", targets, "
      << quoted(targets_text) << ", " << (targets_.empty() ? 0 : targets_.front().program->groups().size()) << ", groups};\n\n";
    write_entries(s);
    return s.str();
}

}  // namespace tessel
