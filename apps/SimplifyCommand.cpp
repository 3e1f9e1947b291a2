#include "apps/Commands.h"
#include "dsl/Simplify.h"

#include <iostream>

namespace tessel::apps {

void add_simplify_command(CLI::App &app, std::function<int()> &action) {
    auto file = std::make_shared<std::string>();
    auto options = std::make_shared<dsl::SimplifyOptions>();
    auto quiet = std::make_shared<bool>(false);
    CLI::App *cmd = app.add_subcommand("simplify",
                                       "Simplify a graph (.tsl): constant folding, algebraic "
                                       "simplification, CSE, DCE, reassociation in fast mode");
    cmd->add_option("file", *file, "graph file (.tsl)")->required();
    cmd->add_option("--dump-after", options->dump_after, "print the graph after these passes ('all' for every pass)")
        ->delimiter(',');
    cmd->add_option("--passes", options->passes, "run these passes once each, in order, instead of the default pipeline")
        ->delimiter(',');
    cmd->add_flag("-q,--quiet", *quiet, "print only the simplified graph");
    cmd->callback([&action, file, options, quiet] {
        action = [file, options, quiet] {
            const dsl::SimplifyResult r = dsl::simplify_file(*file, *options);
            for (const auto &d : r.dumps) std::cout << "// ---- after " << d.label << "\n" << d.text << "\n";
            std::cout << r.graph_text;
            if (!*quiet) {
                std::cout << "\n// ---- passes\n";
                for (const auto &t : r.trace) std::cout << "// " << t << "\n";
                std::cout << "// ---- rewrite log\n" << r.log_text;
            }
            return 0;
        };
    });
}

}  // namespace tessel::apps
