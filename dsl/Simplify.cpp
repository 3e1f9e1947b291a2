#include "dsl/Simplify.h"

#include <algorithm>

#include "dsl/Pipeline.h"
#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"

namespace tessel::dsl {

SimplifyResult simplify_graph(Graph g, const SimplifyOptions &options) {
    PassManager pm = options.passes.empty() ? default_pipeline() : pipeline_from_names(options.passes);
    PassRunOptions ro;
    std::vector<std::string> valid = pm.names();
    for (const std::string &d : options.dump_after) {
        if (d != "all" && std::find(valid.begin(), valid.end(), d) == valid.end()) {
            std::string list;
            for (const auto &v : valid) list += (list.empty() ? "" : ", ") + v;
            throw UserError("--dump-after: unknown pass '" + d + "' (passes: " + list + ", all)");
        }
        ro.dump_after.insert(d);
    }
    SimplifyResult r;
    PassRunResult pr = pm.run(g, ro, &r.log);
    r.graph = std::move(g);
    r.graph_text = print(r.graph);
    r.log_text = r.log.to_string();
    r.dumps = std::move(pr.dumps);
    r.trace = std::move(pr.trace);
    r.converged = pr.converged;
    return r;
}

SimplifyResult simplify_text(const std::string &text, const std::string &filename, const SimplifyOptions &options) {
    return simplify_graph(parse(text, filename), options);
}

SimplifyResult simplify_file(const std::string &path, const SimplifyOptions &options) {
    return simplify_graph(parse_file(path), options);
}

RunResult run_file(const std::string &path, const std::map<std::string, Tensor> &inputs, RunOptions options) {
    options.random_missing_inputs = true;
    return interpret(parse_file(path), inputs, options);
}

}  // namespace tessel::dsl
