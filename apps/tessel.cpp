// tessel: the command-line front end. Each subcommand only parses options and calls the
// library (driver/, dsl/, schedules/); errors are printed as "tessel: error: ..." with exit 1.
#include "apps/Commands.h"

#include <CLI/CLI.hpp>

#include <iostream>

int main(int argc, char **argv) {
    CLI::App app{"Tessel: a Halide-based tensor-kernel compiler.\n"
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
    CLI11_PARSE(app, argc, argv);
    try {
        return action();
    } catch (const std::exception &e) {
        std::cerr << "tessel: error: " << e.what() << "\n";
        return 1;
    }
}
