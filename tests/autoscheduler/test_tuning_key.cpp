// TuningKey: canonical text and JSON, and structural_hash() of fusion groups (a table of graph
// pairs that must hash alike or differently).
#include <doctest/doctest.h>

#include "autoscheduler/TuningKey.h"
#include "dsl/ir/Parser.h"

using namespace tessel;
using namespace tessel::autosched;

namespace {

/** Hash of the only (or the first) fusion group of a TSL graph. */
std::string hash_of(const std::string &text, const std::string &layout_of = "", const std::string &layout = "") {
    dsl::Graph g = dsl::parse(text, "<test>");
    if (!layout_of.empty()) g.node(g.find(layout_of)).layout = *dsl::parse_layout(layout, nullptr);
    dsl::FusionPlan p = dsl::plan_fusion(g);
    REQUIRE(!p.groups.empty());
    return structural_hash(g, p.groups[0]);
}

const char *kBase = R"(graph g {
  %x = input : f32[M, 64]
  %w = input : f32[64, 128]
  %b = input : f32[128]
  %m = matmul(%x, %w)
  %a = add(%m, %b)
  %y = gelu(%a)
  output %y
})";

}  // namespace

TEST_CASE("structural_hash: names, ids, symbol names and program order do not matter") {
    std::string base = hash_of(kBase);
    CHECK(base.size() == 32);
    struct Row {
        const char *why;
        const char *text;
    } same[] = {
        {"renamed values", R"(graph other {
  %input = input : f32[M, 64]
  %weights = input : f32[64, 128]
  %bias = input : f32[128]
  %mm = matmul(%input, %weights)
  %sum = add(%mm, %bias)
  %out = gelu(%sum)
  output %out
})"},
        {"renamed symbol", R"(graph g {
  %x = input : f32[Batch, 64]
  %w = input : f32[64, 128]
  %b = input : f32[128]
  %m = matmul(%x, %w)
  %a = add(%m, %b)
  %y = gelu(%a)
  output %y
})"},
        {"inputs declared in another order (different ids)", R"(graph g {
  %b = input : f32[128]
  %w = input : f32[64, 128]
  %x = input : f32[M, 64]
  %m = matmul(%x, %w)
  %a = add(%m, %b)
  %y = gelu(%a)
  output %y
})"},
    };
    for (const Row &r : same) {
        CAPTURE(r.why);
        CHECK(hash_of(r.text) == base);
    }
}

TEST_CASE("structural_hash: ops, dtypes, layouts, attributes, extents, edges and interface matter") {
    std::string base = hash_of(kBase);
    struct Row {
        const char *why;
        const char *text;
    } differ[] = {
        {"op", R"(graph g {
  %x = input : f32[M, 64]
  %w = input : f32[64, 128]
  %b = input : f32[128]
  %m = matmul(%x, %w)
  %a = add(%m, %b)
  %y = gelu_tanh(%a)
  output %y
})"},
        {"dtype", R"(graph g {
  %x = input : f16[M, 64]
  %w = input : f16[64, 128]
  %b = input : f16[128]
  %m = matmul(%x, %w)
  %a = add(%m, %b)
  %y = gelu(%a)
  output %y
})"},
        {"static extent", R"(graph g {
  %x = input : f32[M, 64]
  %w = input : f32[64, 256]
  %b = input : f32[256]
  %m = matmul(%x, %w)
  %a = add(%m, %b)
  %y = gelu(%a)
  output %y
})"},
        {"symbolic instead of static", R"(graph g {
  %x = input : f32[M, K]
  %w = input : f32[K, 128]
  %b = input : f32[128]
  %m = matmul(%x, %w)
  %a = add(%m, %b)
  %y = gelu(%a)
  output %y
})"},
        {"operand order (edge)", R"(graph g {
  %x = input : f32[M, 64]
  %w = input : f32[64, 128]
  %b = input : f32[128]
  %m = matmul(%x, %w)
  %a = add(%b, %m)
  %y = gelu(%a)
  output %y
})"},
        {"interface: bias broadcast from a 2-D input", R"(graph g {
  %x = input : f32[M, 64]
  %w = input : f32[64, 128]
  %b = input : f32[1, 128]
  %m = matmul(%x, %w)
  %a = add(%m, %b)
  %y = gelu(%a)
  output %y
})"},
        {"extra op", R"(graph g {
  %x = input : f32[M, 64]
  %w = input : f32[64, 128]
  %b = input : f32[128]
  %m = matmul(%x, %w)
  %a = add(%m, %b)
  %y = gelu(%a)
  %z = relu(%y)
  output %z
})"},
        {"constant value", R"(graph g {
  %x = input : f32[M, 64]
  %w = input : f32[64, 128]
  %m = matmul(%x, %w)
  %a = add(%m, 0.5)
  %y = gelu(%a)
  output %y
})"},
    };
    for (const Row &r : differ) {
        CAPTURE(r.why);
        CHECK(hash_of(r.text) != base);
    }
    SUBCASE("layout of a member") { CHECK(hash_of(kBase, "m", "[1, 0]") != base); }
    SUBCASE("layout of an interface input") { CHECK(hash_of(kBase, "w", "panels(axis=1, width=16)") != base); }
}

TEST_CASE("structural_hash: attributes and constants") {
    const char *axes1 = R"(graph g {
  %x = input : f32[4, 8]
  %s = reduce_sum(%x, axes=[1])
  output %s
})";
    const char *axes0 = R"(graph g {
  %x = input : f32[4, 8]
  %s = reduce_sum(%x, axes=[0])
  output %s
})";
    const char *keep = R"(graph g {
  %x = input : f32[4, 8]
  %s = reduce_sum(%x, axes=[1], keepdims=true)
  output %s
})";
    CHECK(hash_of(axes1) != hash_of(axes0));
    CHECK(hash_of(axes1) != hash_of(keep));
    const char *half = R"(graph g {
  %x = input : f32[4, 8]
  %y = mul(%x, 0.5)
  output %y
})";
    const char *quarter = R"(graph g {
  %x = input : f32[4, 8]
  %y = mul(%x, 0.25)
  output %y
})";
    CHECK(hash_of(half) != hash_of(quarter));
}

TEST_CASE("structural_descriptor: readable canonical text") {
    dsl::Graph g = dsl::parse(kBase, "<test>");
    dsl::FusionPlan p = dsl::plan_fusion(g);
    std::string d = structural_descriptor(g, p.groups[0]);
    CHECK(d.find("n0 = matmul(in0, in1) : f32[s0,128]") != std::string::npos);
    CHECK(d.find("outputs n2") != std::string::npos);
    CHECK(d.find("in2 : f32[128]") != std::string::npos);
    CHECK(d.find("%") == std::string::npos);  // no value names
}

TEST_CASE("TuningKey: versions, canonical text and JSON") {
    TuningKey k = TuningKey::current();
    CHECK(k.tessel_version == "0.1.0");
    CHECK(k.halide_version.rfind("21.", 0) == 0);
    CHECK(k.schema_version == kTuningKeySchemaVersion);
    k.group_hash = "abc";
    k.shapes = format_shapes({{"N", 4096}, {"M", 1}, {"K", 4096}});
    CHECK(k.shapes == "K=4096,M=1,N=4096");
    k.target = "x86-64-linux-avx2-fma";
    k.numeric_mode = to_key_string(dsl::NumericMode::Fast);
    k.space_version = 2;
    CHECK(k.to_string() ==
          "tk1 group=abc class=- shapes=K=4096,M=1,N=4096 target=x86-64-linux-avx2-fma "
          "mode=fast space=2 tessel=0.1.0 halide=" +
              k.halide_version);
    CHECK(TuningKey::from_json(k.to_json()) == k);
    CHECK(TuningKey::from_json(nlohmann::json::parse(k.to_json().dump())) == k);
    nlohmann::json bad = k.to_json();
    bad.erase("target");
    CHECK_THROWS_WITH_AS(TuningKey::from_json(bad), doctest::Contains("target"), TuningKeyError);
    bad = k.to_json();
    bad["space_version"] = "two";
    CHECK_THROWS_WITH_AS(TuningKey::from_json(bad), doctest::Contains("space_version"), TuningKeyError);
}
