// Buffer assignment (dsl/analysis/BufferAssignment.h): live ranges, views, in-place updates and
// their refusals, the two reuse policies, and the no-overlap checker on every example graph and
// on random graphs, fused and unfused.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "dsl/Pipeline.h"
#include "dsl/analysis/BufferAssignment.h"
#include "dsl/ir/Builder.h"
#include "dsl/ir/Parser.h"
#include "dsl/passes/FusionPolicy.h"
#include "tests/dsl/RandomKernelGraphs.h"

using namespace tessel::dsl;

namespace {

FusionPlan plan(const Graph &g, bool fused = true) {
    FusionOptions o;
    if (!fused) o.policy = &unfused_policy();
    return plan_fusion(g, o);
}

Graph simplified(Graph g) {
    default_pipeline().run(g);
    return g;
}

const char *kChain = R"(
graph chain {
  %x = input : f32[M, 64]
  %w = input : f32[64, 64]
  %a = matmul(%x, %w)
  %b = matmul(%a, %w)
  %c = matmul(%b, %w)
  %y = matmul(%c, %w)
  output %y
})";

}  // namespace

TEST_CASE("buffer assignment: a chain reuses the storage of values that died") {
    Graph g = parse(kChain, "<chain>");
    FusionPlan p = plan(g);
    REQUIRE(p.groups.size() == 4);
    BufferAssignment a = assign_buffers(g, p, {{"M", 10}});
    const int64_t one = 10 * 64 * 4;  // 2560 bytes, a multiple of 64
    CHECK(a.naive_bytes == 3 * one);
    CHECK(a.lower_bound == 2 * one);
    CHECK(a.planned_peak == 2 * one);
    CHECK(a.buffer(g.find("a"))->def_step == 0);
    CHECK(a.buffer(g.find("a"))->last_use_step == 1);
    CHECK(a.offset_of(g.find("a")) == a.offset_of(g.find("c")));
    CHECK(a.offset_of(g.find("y")) == -1);  // the caller's
    CHECK(a.buffer(g.find("y"))->kind == LogicalBuffer::Kind::GraphOutput);
    CHECK(check_no_overlap(a, p, g).empty());
    CHECK(a.added_edges.empty());  // a chain is ordered already
    CHECK(a.to_string(g).find("planned / bound = 1") != std::string::npos);
}

TEST_CASE("buffer assignment: reuse between independent groups adds orderings, or is forbidden") {
    // Two independent branches: %a, %b from x; %c, %d from v. Serial order runs a, b, c, d.
    Graph g = parse(R"(
graph branches {
  %x = input : f32[16, 16]
  %v = input : f32[16, 16]
  %w = input : f32[16, 16]
  %a = matmul(%x, %w)
  %b = matmul(%a, %w)
  %c = matmul(%v, %w)
  %d = matmul(%c, %w)
  %y = matmul(%b, %d)
  output %y
})",
                    "<branches>");
    FusionPlan p = plan(g);
    BufferAssignmentOptions serial, separate;
    separate.policy = ReusePolicy::NoConcurrentReuse;
    BufferAssignment s = assign_buffers(g, p, {}, serial), n = assign_buffers(g, p, {}, separate);
    CHECK(check_no_overlap(s, p, g).empty());
    CHECK(check_no_overlap(n, p, g).empty());
    // Serial: %c reuses %a's bytes, which orders group b (a's reader) before group c.
    CHECK(s.offset_of(g.find("a")) == s.offset_of(g.find("c")));
    REQUIRE_FALSE(s.added_edges.empty());
    CHECK(s.added_edges[0].why.find("%a's memory is reused by %c") != std::string::npos);
    CHECK(n.added_edges.empty());
    CHECK(n.planned_peak > s.planned_peak);
    CHECK(n.offset_of(g.find("a")) != n.offset_of(g.find("c")));
}

TEST_CASE("buffer assignment: a transpose or reshape group is a view of its operand") {
    Graph g = parse(R"(
graph views {
  %x = input : f32[2, 8, 12]
  %w = input : f32[12, 8]
  %a = matmul(%x, %w)
  %t = transpose(%a, perm=[1, 0, 2])
  %r = reshape(%a) : f32[4, 32]
  %s = reshape(%t) : f32[128]
  %m = transpose(%r)
  %y = reduce_sum(%t, axes=[2])
  %z = reduce_sum(%r, axes=[1])
  %u = reduce_sum(%s, axes=[0])
  %v = reduce_sum(%m, axes=[1])
  output %y, %z, %u, %v
})",
                    "<views>");
    // Fusion reads data movement inline where it can; unfused, each op is its own group.
    FusionPlan p = plan(g, /*fused=*/false);
    BufferAssignment a = assign_buffers(g, p, {});
    INFO(p.to_string(g) << a.to_string(g));
    for (const char *v : {"a", "t", "r", "s", "m"}) REQUIRE(a.buffer(g.find(v)));
    auto refusal = [&](const char *v) {
        for (const auto &d : a.decisions)
            if (d.result == g.find(v) && !d.applied) return d.reason;
        return std::string();
    };
    CHECK(a.buffer(g.find("t"))->kind == LogicalBuffer::Kind::View);
    CHECK(a.buffer(g.find("t"))->strided);
    CHECK(a.buffer(g.find("r"))->kind == LogicalBuffer::Kind::View);
    CHECK_FALSE(a.buffer(g.find("r"))->strided);
    CHECK(a.offset_of(g.find("t")) == a.offset_of(g.find("a")));
    // A reshape of a strided view needs a copy, and so does a transpose of the innermost axis.
    CHECK(a.buffer(g.find("s"))->kind == LogicalBuffer::Kind::Arena);
    CHECK(refusal("s").find("strided view") != std::string::npos);
    CHECK(a.buffer(g.find("m"))->kind == LogicalBuffer::Kind::Arena);
    CHECK(refusal("m").find("innermost axis") != std::string::npos);
    // One allocation holds %a and its two views, live until the last view's reader.
    const Allocation &al = a.allocations[a.buffer(g.find("a"))->allocation];
    CHECK(al.values.size() == 3);
    CHECK(al.last_step == std::max(a.buffer(g.find("t"))->last_use_step, a.buffer(g.find("r"))->last_use_step));
    CHECK(check_no_overlap(a, p, g).empty());
}

TEST_CASE("buffer assignment: in-place updates and every refusal's reason") {
    // Unfused, every op is a group: %e = exp(%a) may overwrite %a, which dies there.
    Graph g = parse(R"(
graph inplace {
  %x = input : f32[8, 8]
  %w = input : f32[8, 8]
  %a = matmul(%x, %w)
  %e = exp(%a)
  %f = %e * %w
  %g = %f + %e
  %y = matmul(%g, %w)
  output %y
})",
                    "<inplace>");
    FusionPlan p = plan(g, /*fused=*/false);
    BufferAssignment a = assign_buffers(g, p, {});
    auto decision = [&](const char *result, const char *operand) -> const AliasDecision * {
        for (const auto &d : a.decisions)
            if (d.result == g.find(result) && d.operand == g.find(operand)) return &d;
        return nullptr;
    };
    REQUIRE(decision("e", "a"));
    CHECK(decision("e", "a")->applied);
    CHECK(a.offset_of(g.find("e")) == a.offset_of(g.find("a")));
    // %e is read again by %g, so %f cannot overwrite it; %w is the caller's input.
    REQUIRE(decision("f", "e"));
    CHECK_FALSE(decision("f", "e")->applied);
    CHECK(decision("f", "e")->reason.find("read again at step") != std::string::npos);
    REQUIRE(decision("f", "w"));
    CHECK(decision("f", "w")->reason.find("did not donate") != std::string::npos);
    // %g may overwrite %f (first candidate); %e then dies too but the output is taken.
    CHECK(decision("g", "f")->applied);
    CHECK(decision("g", "e")->reason.find("already writes into another input") != std::string::npos);
    CHECK(check_no_overlap(a, p, g).empty());

    SUBCASE("a donated input may be overwritten") {
        BufferAssignmentOptions o;
        o.donated_inputs = {"w"};
        BufferAssignment d = assign_buffers(g, p, {}, o);
        bool w_overwritten = false;
        for (const auto &x : d.decisions) w_overwritten |= x.applied && x.operand == g.find("w");
        CHECK_FALSE(w_overwritten);  // %w is read by %y later: donation does not make it die
    }
    SUBCASE("the schedule's tail strategy can forbid it") {
        BufferAssignmentOptions o;
        o.schedule_reads_before_writes = [](int, std::string *why) {
            *why = "split n with a shifted tail";
            return false;
        };
        BufferAssignment s = assign_buffers(g, p, {}, o);
        for (const auto &x : s.decisions) {
            CHECK_FALSE(x.applied);
            CHECK(x.reason.find("shifted tail") != std::string::npos);
        }
    }
    SUBCASE("graph outputs, several outputs and non-pointwise members are refused") {
        Graph h = parse(R"(
graph refusals {
  %x = input : f32[4, 4]
  %w = input : f32[4, 4]
  %a = matmul(%x, %w)
  %y = exp(%a)
  %b = matmul(%x, %w)
  %t = transpose(%b)
  %c = exp(%t)
  %z = matmul(%c, %w)
  output %y, %z
})",
                        "<refusals>");
        FusionPlan q = plan(h);
        BufferAssignment r = assign_buffers(h, q, {});
        for (const auto &x : r.decisions) CHECK_FALSE((x.applied && x.rule == "in-place"));
        CHECK(check_no_overlap(r, q, h).empty());
    }
}

TEST_CASE("buffer assignment: donated input receives an elementwise result") {
    Graph g = parse(R"(
graph donate {
  %x = input : f32[8, 8]
  %w = input : f32[8, 8]
  %e = exp(%x)
  %y = matmul(%e, %w)
  output %y
})",
                    "<donate>");
    FusionPlan p = plan(g, /*fused=*/false);
    BufferAssignmentOptions o;
    o.donated_inputs = {"x"};
    BufferAssignment a = assign_buffers(g, p, {}, o);
    CHECK(a.buffer(g.find("e"))->kind == LogicalBuffer::Kind::InPlace);
    CHECK(a.buffer(g.find("e"))->shares_with == g.find("x"));
    CHECK(a.offset_of(g.find("e")) == -1);  // in the caller's donated buffer
    CHECK(a.planned_peak == 0);
    BufferAssignment kept = assign_buffers(g, p, {});
    CHECK(kept.buffer(g.find("e"))->kind == LogicalBuffer::Kind::Arena);
}

TEST_CASE("buffer assignment: the checker catches overlapping live buffers") {
    Graph g = parse(kChain, "<chain>");
    FusionPlan p = plan(g);
    BufferAssignment a = assign_buffers(g, p, {{"M", 4}});
    REQUIRE(a.allocations.size() >= 2);
    // Put %b (live 1-2) where %a (live 0-1) is: they are both live at step 1.
    a.allocations[a.buffer(g.find("b"))->allocation].offset = a.offset_of(g.find("a"));
    CHECK_FALSE(check_no_overlap(a, p, g).empty());
}

TEST_CASE("buffer assignment: every example graph is sound and within 5% of the bound") {
    int graphs = 0;
    for (const auto &e : std::filesystem::directory_iterator(std::string(TESSEL_SOURCE_DIR) + "/algorithms")) {
        if (e.path().extension() != ".tsl") continue;
        Graph g = simplified(parse_file(e.path().string()));
        for (bool fused : {true, false}) {
            FusionPlan p = plan(g, fused);
            for (ReusePolicy policy : {ReusePolicy::Serial, ReusePolicy::NoConcurrentReuse}) {
                BufferAssignmentOptions o;
                o.policy = policy;
                std::map<std::string, int64_t> symbols;
                for (const char *s : {"M", "K", "N", "H", "S", "T"}) symbols[s] = 96;
                BufferAssignment a = assign_buffers(g, p, symbols, o);
                INFO(e.path().filename().string() << (fused ? " fused " : " unfused ") << to_string(policy));
                CHECK(check_no_overlap(a, p, g).empty());
                CHECK(a.planned_peak <= a.naive_bytes);
                if (policy == ReusePolicy::Serial) CHECK(a.planned_peak <= a.lower_bound * 105 / 100);
            }
        }
        graphs++;
    }
    CHECK(graphs >= 6);
}

TEST_CASE("buffer assignment: 1000 random graphs, fused and unfused, never overlap") {
    const int n = std::getenv("TESSEL_MEMPLAN_GRAPHS") ? std::atoi(std::getenv("TESSEL_MEMPLAN_GRAPHS")) : 1000;
    std::vector<double> quality;
    int in_place = 0, views = 0;
    for (int seed = 0; seed < n; seed++) {
        Graph g = simplified(tessel::dsl::test::random_kernel_graph(seed, 6 + seed % 14));
        for (bool fused : {true, false}) {
            FusionPlan p = plan(g, fused);
            for (ReusePolicy policy : {ReusePolicy::Serial, ReusePolicy::NoConcurrentReuse}) {
                BufferAssignmentOptions o;
                o.policy = policy;
                BufferAssignment a = assign_buffers(g, p, {}, o);
                const auto problems = check_no_overlap(a, p, g);
                INFO("seed " << seed << (fused ? " fused " : " unfused ") << to_string(policy) << "\n" << a.to_string(g));
                REQUIRE(problems.empty());
                CHECK(a.lower_bound <= a.planned_peak);
                CHECK(a.planned_peak <= a.naive_bytes);
                if (policy == ReusePolicy::Serial) quality.push_back(a.quality());
                for (const auto &d : a.decisions) (d.rule == "in-place" ? in_place : views) += d.applied;
            }
        }
    }
    std::sort(quality.begin(), quality.end());
    const double p50 = quality[quality.size() / 2], p99 = quality[quality.size() * 99 / 100], worst = quality.back();
    MESSAGE("planned / bound over " << quality.size() << " plans: median " << p50 << ", p99 " << p99 << ", worst " << worst
                                    << "; in-place " << in_place << ", views " << views);
    CHECK(in_place > 0);
    CHECK(views > 0);
    CHECK(p99 <= 1.10);
}

TEST_CASE("buffer assignment: large plans are packed by linear scan, fast and sound") {
    // 6000 matmul groups in a chain with a side branch every tenth: more allocations than
    // best fit takes, and more groups than the dependence order is kept for.
    GraphBuilder b("long_chain");
    Value w = b.input("w", DType::F32, {16, 16});
    Value x = b.input("x", DType::F32, {8, 16});
    Value side = x;
    for (int i = 0; i < 9000; i++) {
        x = matmul(x, w);
        if (i % 10 == 0) side = x;
        if (i % 10 == 9) x = x + matmul(side, w);
    }
    b.output("y", x);
    const Graph g = std::move(b).build();
    FusionOptions fo;
    fo.sibling_fusion = false;  // the matmuls share w, not x: no siblings to look for
    const FusionPlan p = plan_fusion(g, fo);
    REQUIRE(p.groups.size() > (size_t)kMaxOrderedGroups);
    for (ReusePolicy policy : {ReusePolicy::Serial, ReusePolicy::NoConcurrentReuse}) {
        BufferAssignmentOptions o;
        o.policy = policy;
        const BufferAssignment a = assign_buffers(g, p, {}, o);
        REQUIRE_FALSE(a.notes.empty());
        CHECK(a.lower_bound <= a.planned_peak);
        CHECK(a.planned_peak <= a.naive_bytes);
        if (policy == ReusePolicy::Serial) CHECK(a.planned_peak <= 2 * a.lower_bound);
        // The checker is quadratic; here: a sweep over allocations by first step, each against
        // the ones still live, compared by live range and bytes.
        std::vector<const Allocation *> by_start;
        for (const auto &al : a.allocations) by_start.push_back(&al);
        std::sort(by_start.begin(), by_start.end(), [](auto *x, auto *y) { return x->first_step < y->first_step; });
        std::vector<const Allocation *> live;
        int clashes = 0;
        for (const Allocation *cur : by_start) {
            live.erase(std::remove_if(live.begin(), live.end(), [&](auto *l) { return l->last_step < cur->first_step; }),
                       live.end());
            for (const Allocation *l : live)
                clashes += l->offset < cur->offset + cur->bytes && cur->offset < l->offset + l->bytes;
            live.push_back(cur);
        }
        CHECK(clashes == 0);
    }
}

TEST_CASE("buffer assignment: a transpose laid out as its operand's bytes is a view; layouts block other aliases") {
    // Unfused, every op is its own group: %t (the transpose of a copy stored k-major) holds the
    // copy's bytes row-major, %u's layout keeps %a's bytes; %v's does not, so it is a kernel.
    Graph g = parse(R"(
graph laid_out {
  %x = input : f32[6, 8]
  %w = input : f32[8, 5]
  %a = matmul(%x, %w)
  %c = copy(%a, layout="[1, 0]")
  %t = transpose(%c)
  %u = transpose(%a, layout="[1, 0]")
  %v = transpose(%a, layout="[0, 1]")
  %e = exp(%c)
  %y = reduce_sum(%t, axes=[1])
  %z = reduce_sum(%u, axes=[1])
  %q = reduce_sum(%e, axes=[1])
  output %y, %z, %v, %q
})",
                    "<laid_out>");
    FusionPlan p = plan(g, /*fused=*/false);
    BufferAssignment a = assign_buffers(g, p, {});
    INFO(p.to_string(g) << a.to_string(g));
    auto decision = [&](const char *v, const char *kind) {
        for (const auto &d : a.decisions)
            if (d.result == g.find(v) && d.rule == kind) return (d.applied ? "yes: " : "no: ") + d.reason;
        return std::string();
    };
    CHECK(a.buffer(g.find("t"))->kind == LogicalBuffer::Kind::View);
    CHECK_FALSE(a.buffer(g.find("t"))->strided);
    CHECK(decision("t", "view").find("a bitcast, no kernel runs") != std::string::npos);
    CHECK(a.buffer(g.find("u"))->kind == LogicalBuffer::Kind::View);
    CHECK(a.offset_of(g.find("u")) == a.offset_of(g.find("a")));
    // %v = transpose(%a) stored row-major: a copy kernel (%a's axis 1 moves).
    CHECK(a.buffer(g.find("v"))->kind != LogicalBuffer::Kind::View);
    // The copy is never in place over %a: an element's place differs.
    CHECK(a.buffer(g.find("c"))->kind == LogicalBuffer::Kind::Arena);
    CHECK(decision("c", "in-place").find("stored in layout row_major and the output in [1, 0]") != std::string::npos);
    CHECK(check_no_overlap(a, p, g).empty());
}
