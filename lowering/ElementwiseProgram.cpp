#include "lowering/ElementwiseProgram.h"

#include "dsl/ir/TypeInference.h"
#include "lowering/LowerToHalide.h"

#include <HalideRuntime.h>

#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

namespace tessel::lower {

namespace {

/** The program op of each graph op a program computes; -1: none. */
int program_op(dsl::Op op) {
    using dsl::Op;
    switch (op) {
    case Op::Add: return TESSEL_PROGRAM_ADD;
    case Op::Sub: return TESSEL_PROGRAM_SUB;
    case Op::Mul: return TESSEL_PROGRAM_MUL;
    case Op::Div: return TESSEL_PROGRAM_DIV;
    case Op::Max: return TESSEL_PROGRAM_MAX;
    case Op::Min: return TESSEL_PROGRAM_MIN;
    case Op::Less: return TESSEL_PROGRAM_LT;
    case Op::LessEqual: return TESSEL_PROGRAM_LE;
    case Op::Greater: return TESSEL_PROGRAM_GT;
    case Op::GreaterEqual: return TESSEL_PROGRAM_GE;
    case Op::Equal: return TESSEL_PROGRAM_EQ;
    case Op::NotEqual: return TESSEL_PROGRAM_NE;
    case Op::Where: return TESSEL_PROGRAM_WHERE;
    case Op::Gelu: return TESSEL_PROGRAM_GELU;
    case Op::GeluTanh: return TESSEL_PROGRAM_GELU_TANH;
    case Op::Tanh: return TESSEL_PROGRAM_TANH;
    case Op::Exp: return TESSEL_PROGRAM_EXP;
    case Op::Relu: return TESSEL_PROGRAM_RELU;
    case Op::Neg: return TESSEL_PROGRAM_NEG;
    case Op::Abs: return TESSEL_PROGRAM_ABS;
    case Op::Sqrt: return TESSEL_PROGRAM_SQRT;
    case Op::Rsqrt: return TESSEL_PROGRAM_RSQRT;
    case Op::Log: return TESSEL_PROGRAM_LOG;
    case Op::Sigmoid: return TESSEL_PROGRAM_SIGMOID;
    case Op::Silu: return TESSEL_PROGRAM_SILU;
    case Op::Sin: return TESSEL_PROGRAM_SIN;
    case Op::Cos: return TESSEL_PROGRAM_COS;
    case Op::Copy:
    case Op::Cast: return TESSEL_PROGRAM_COPY;  // f32 to f32 only (program_refusal)
    case Op::Constant: return TESSEL_PROGRAM_CONST;
    default: return -1;
    }
}

const char *op_text(int op) {
    static const char *const names[TESSEL_PROGRAM_OP_COUNT] = {
        "const", "copy", "add",  "sub",   "mul",   "div",     "max",       "min",  "lt",  "le",
        "gt",    "ge",   "eq",   "ne",    "where", "gelu",    "gelu_tanh", "tanh", "exp", "relu",
        "neg",   "abs",  "sqrt", "rsqrt", "log",   "sigmoid", "silu",      "sin",  "cos"};
    return op >= 0 && op < TESSEL_PROGRAM_OP_COUNT ? names[op] : "?";
}

bool is_scalar_constant(const dsl::Node &n) { return n.op == dsl::Op::Constant && n.attrs.value.size() == 1; }

}  // namespace

std::optional<std::string> program_refusal(const dsl::Graph &g, const dsl::FusionGroup &group) {
    if (group.kind != dsl::GroupKind::Elementwise)
        return std::string("a ") + dsl::to_string(group.kind) + " group (programs are elementwise)";
    if (group.outputs.empty()) return std::string("the group has no outputs");
    const std::set<dsl::ValueId> members(group.nodes.begin(), group.nodes.end());
    const dsl::TensorType &domain = g.node(group.outputs.front()).type;
    auto f32_row_major = [&](dsl::ValueId v, const char *what) -> std::optional<std::string> {
        const dsl::Node &n = g.node(v);
        if (n.type.dtype != dsl::DType::F32)
            return std::string(what) + " " + g.display_name(v) + " is " + dsl::to_string(n.type.dtype) + " (programs are f32)";
        if (!n.layout.empty()) return std::string(what) + " " + g.display_name(v) + " has a layout (programs read row-major)";
        return std::nullopt;
    };
    // Each value must broadcast to the domain: computed at every output element, it is itself.
    auto broadcasts = [&](dsl::ValueId v) {
        const dsl::TensorType &t = g.node(v).type;
        if (t.rank() > domain.rank()) return false;
        for (int i = 1; i <= t.rank(); i++) {
            const dsl::Dim &d = t.dims[(size_t)(t.rank() - i)], &e = domain.dims[(size_t)(domain.rank() - i)];
            if (!dsl::same_dim(g, d, e) && !(d.is_static() && d.size == 1)) return false;
        }
        return true;
    };
    for (dsl::ValueId v : group.outputs) {
        if (auto why = f32_row_major(v, "output")) return why;
        const dsl::TensorType &t = g.node(v).type;
        bool same = t.rank() == domain.rank();
        for (int i = 0; same && i < t.rank(); i++) same = dsl::same_dim(g, t.dims[(size_t)i], domain.dims[(size_t)i]);
        if (!same) return "outputs " + g.display_name(group.outputs.front()) + " and " + g.display_name(v) + " differ in shape";
    }
    for (dsl::ValueId v : group.nodes) {
        const dsl::Node &n = g.node(v);
        if (program_op(n.op) < 0)
            return std::string("op ") + dsl::to_string(n.op) + " (" + g.display_name(v) + ") has no program step";
        if (n.op == dsl::Op::Constant && !is_scalar_constant(n))
            return "constant " + g.display_name(v) + " holds more than one value";
        if (auto why = f32_row_major(v, "value")) return why;
        if (!broadcasts(v)) return "value " + g.display_name(v) + " does not broadcast to the outputs' shape";
        for (dsl::ValueId in : n.inputs) {
            if (members.count(in) || is_scalar_constant(g.node(in))) continue;
            if (auto why = f32_row_major(in, "input")) return why;
            if (!broadcasts(in)) return "input " + g.display_name(in) + " does not broadcast to the outputs' shape";
        }
    }
    return std::nullopt;
}

ElementwiseProgram build_program(const dsl::Graph &g, const dsl::FusionGroup &group, const std::vector<dsl::ValueId> &inputs,
                                 const std::vector<dsl::ValueId> &outputs, std::vector<std::string> names) {
    if (auto why = program_refusal(g, group)) throw LoweringError("group " + group.name + " cannot run as a program: " + *why);
    ElementwiseProgram p;
    p.name = group.name;
    p.input_count = (int)inputs.size();
    p.output_count = (int)outputs.size();
    p.argument_names = std::move(names);

    // Last use of every value (step index), so that a register is reused once its value is dead;
    // outputs live to the end.
    std::map<dsl::ValueId, size_t> last_use;
    for (size_t s = 0; s < group.nodes.size(); s++)
        for (dsl::ValueId in : g.node(group.nodes[s]).inputs) last_use[in] = s;
    const std::set<dsl::ValueId> kept(outputs.begin(), outputs.end());
    std::map<dsl::ValueId, int32_t> reg;
    std::vector<int32_t> free_registers;
    auto allocate = [&]() -> int32_t {
        if (!free_registers.empty()) {
            const int32_t r = free_registers.back();
            free_registers.pop_back();
            return r;
        }
        return p.register_count++;
    };
    for (dsl::ValueId v : inputs) reg[v] = allocate();
    for (size_t s = 0; s < group.nodes.size(); s++) {
        const dsl::ValueId v = group.nodes[s];
        const dsl::Node &n = g.node(v);
        tessel_program_step step{program_op(n.op), -1, -1, -1, -1, 0.0f};
        if (n.op == dsl::Op::Constant) step.value = scalar_constant_value(n);
        int32_t *operand[3] = {&step.a, &step.b, &step.c};
        for (size_t i = 0; i < n.inputs.size() && i < 3; i++) {
            const dsl::ValueId in = n.inputs[i];
            if (!reg.count(in) && is_scalar_constant(g.node(in))) {  // a constant outside the group: a step of its own
                reg[in] = allocate();
                p.steps.push_back({TESSEL_PROGRAM_CONST, reg[in], -1, -1, -1, scalar_constant_value(g.node(in))});
            }
            const auto it = reg.find(in);
            if (it == reg.end())
                throw LoweringError("group " + group.name + ": " + g.display_name(in) +
                                    " is neither an argument nor computed before " + g.display_name(v));
            *operand[i] = it->second;
        }
        // Operands that die here free their registers before the result takes one (a step may
        // write the register it reads: every op is lane by lane).
        std::set<dsl::ValueId> dead;
        for (dsl::ValueId in : n.inputs)
            if (last_use.at(in) == s && !kept.count(in) && reg.count(in)) dead.insert(in);
        for (dsl::ValueId d : dead) {
            free_registers.push_back(reg.at(d));
            reg.erase(d);
        }
        step.result = allocate();
        reg[v] = step.result;
        p.steps.push_back(step);
        if (!last_use.count(v) && !kept.count(v)) {  // dead on arrival (DCE leaves none; cheap to allow)
            free_registers.push_back(reg.at(v));
            reg.erase(v);
        }
    }
    for (dsl::ValueId v : outputs) {
        auto it = reg.find(v);
        if (it == reg.end()) throw LoweringError("group " + group.name + ": output " + g.display_name(v) + " is not computed");
        p.output_registers.push_back(it->second);
    }
    return p;
}

tessel_program ElementwiseProgram::view() const {
    return {name.c_str(),          input_count,  output_count,           register_count,
            (int32_t)steps.size(), steps.data(), output_registers.data()};
}

std::string ElementwiseProgram::to_string() const {
    std::ostringstream os;
    auto arg = [&](size_t i) { return i < argument_names.size() ? argument_names[i] : "arg" + std::to_string(i); };
    os << "program " << name << " (";
    for (int i = 0; i < input_count; i++) os << (i ? ", " : "") << arg((size_t)i);
    os << " ->";
    for (int i = 0; i < output_count; i++) os << (i ? ", " : " ") << arg((size_t)(input_count + i));
    os << "): " << register_count << " registers\n";
    for (int i = 0; i < input_count; i++) os << "  r" << i << " = " << arg((size_t)i) << "\n";
    for (const tessel_program_step &s : steps) {
        os << "  r" << s.result << " = " << op_text(s.op);
        if (s.op == TESSEL_PROGRAM_CONST) os << " " << s.value;
        const int32_t operands[3] = {s.a, s.b, s.c};
        for (int i = 0; i < 3 && operands[i] >= 0; i++) os << (i ? ", r" : " r") << operands[i];
        os << "\n";
    }
    for (int i = 0; i < output_count; i++)
        os << "  " << arg((size_t)(input_count + i)) << " = r" << output_registers[(size_t)i] << "\n";
    return os.str();
}

void run_program(const ElementwiseProgram &program, const std::vector<halide_buffer_t *> &buffers) {
    if ((int)buffers.size() != program.input_count + program.output_count)
        throw std::invalid_argument("program " + program.name + ": " + std::to_string(buffers.size()) + " buffers for " +
                                    std::to_string(program.input_count + program.output_count) + " arguments");
    char error[512] = "";
    const tessel_program view = program.view();
    if (tessel_program_run(&view, buffers.data(), error, sizeof error) != 0) throw std::runtime_error(error);
}

}  // namespace tessel::lower
