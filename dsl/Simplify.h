/** \file
 * Library entry points behind `tessel simplify FILE [--dump-after=PASS] [--passes=a,b]` and
 * `tessel run FILE` (the CLI lives in apps/ and only parses flags and prints these results).
 *
 *   SimplifyResult r = simplify_file("algorithms/gelu_mlp.tsl", {{"fold-constants"}, {}});
 *   std::cout << r.graph_text << "\n" << r.log_text;   // dumps: r.dumps[i].label / .text
 */
#pragma once

#include <map>
#include <string>
#include <vector>

#include "dsl/PassManager.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/ir/Graph.h"
#include "dsl/passes/RewriteLog.h"

namespace tessel::dsl {

struct SimplifyOptions {
    /** Pass or group names to dump after ("all" for every pass). Unknown names: UserError. */
    std::vector<std::string> dump_after;
    /** Passes to run once each, in order; empty means default_pipeline(). */
    std::vector<std::string> passes;
};

struct SimplifyResult {
    Graph graph;             ///< the simplified graph
    std::string graph_text;  ///< print(graph)
    RewriteLog log;
    std::string log_text;  ///< log.to_string()
    std::vector<PassDump> dumps;
    std::vector<std::string> trace;  ///< which passes ran and whether they changed the graph
    bool converged = true;
};

/** Parse `path` and simplify it. Throws UserError (ParseError with file:line:col for bad text). */
SimplifyResult simplify_file(const std::string &path, const SimplifyOptions &options = {});
/** Same on text already in memory; `filename` is used in error messages. */
SimplifyResult simplify_text(const std::string &text, const std::string &filename, const SimplifyOptions &options = {});
/** Simplify a graph in place with the default pipeline (or options.passes). */
SimplifyResult simplify_graph(Graph g, const SimplifyOptions &options = {});

/** Run the reference interpreter on a .tsl file with the given inputs; missing inputs are random
 * (RunOptions::random_missing_inputs is forced on) and reported in RunResult::inputs. */
RunResult run_file(const std::string &path, const std::map<std::string, Tensor> &inputs = {}, RunOptions options = {});

}  // namespace tessel::dsl
