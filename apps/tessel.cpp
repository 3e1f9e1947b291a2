// tessel: the command-line front end. Each subcommand only parses options and calls the
// library (driver/, dsl/, schedules/); errors are printed once, by dsl::format_error, with exit 1:
// "file:line:col: error: ..." for located ones, "tessel: error: ..." for the rest.
#include "apps/Commands.h"
#include "dsl/ir/Diagnostics.h"

#include <CLI/CLI.hpp>

#include <iostream>

int main(int argc, char **argv) {
    CLI::App app{
        "Tessel: a Halide-based tensor-kernel compiler.\n"
        "Write an algorithm once, schedule it by hand or automatically, emit CPU or CUDA code."};
    app.require_subcommand(1);
    std::function<int()> action;
    tessel::apps::add_demo_command(app, action);
    tessel::apps::add_schedules_command(app, action);
    tessel::apps::add_simplify_command(app, action);
    tessel::apps::add_compile_command(app, action);
    tessel::apps::add_run_command(app, action);
    tessel::apps::add_tune_command(app, action);
    tessel::apps::add_db_command(app, action);
    tessel::apps::add_specialize_command(app, action);
    tessel::apps::add_lib_command(app, action);
    tessel::apps::add_worker_command(app, action);
    tessel::apps::add_jobs_command(app, action);
    CLI11_PARSE(app, argc, argv);
    try {
        return action();
    } catch (const std::exception &e) {
        std::cerr << tessel::dsl::format_error(e) << "\n";
        return 1;
    }
}
