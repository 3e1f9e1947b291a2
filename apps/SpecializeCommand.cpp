#include "apps/Commands.h"
#include "driver/Specialize.h"

#include <iostream>

namespace tessel::apps {

void add_budget_options(CLI::App *cmd, autosched::PlannerBudgets &b) {
    cmd->add_option("--budget-compile", b.compile_seconds, "seconds of compilation allowed (all kept variants)")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--budget-tuning", b.tuning_seconds, "seconds of tuning allowed")->check(CLI::NonNegativeNumber);
    cmd->add_option("--budget-code", b.code_bytes, "bytes of code allowed")->check(CLI::PositiveNumber);
}

void add_specialize_command(CLI::App &app, std::function<int()> &action) {
    auto o = std::make_shared<SpecializeOptions>();
    auto starts = std::make_shared<double>(1);
    CLI::App *cmd = app.add_subcommand("specialize",
                                       "Measure the running example's guarded variants on a shape profile "
                                       "and choose which to keep under compile, tuning and code budgets");
    cmd->add_option("profile", o->profile_file, "shape profile: lines 'M=1 K=4096 N=4096 calls=12000'")
        ->required()
        ->check(CLI::ExistingFile);
    cmd->add_option("--schedule", o->schedule, "CPU library schedule with guarded variants")->capture_default_str();
    cmd->add_option("--target", o->target, "a CPU target")->capture_default_str();
    cmd->add_option("--repeats", o->repeats, "timed rounds per shape (median; variants interleaved)")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000));
    add_budget_options(cmd, o->budgets);
    cmd->add_option("--starts", *starts, "process starts sharing one compile and one tuning run (JIT: 1)")
        ->capture_default_str()
        ->check(CLI::Range(1.0, 1e12));
    cmd->callback([&action, o, starts] {
        action = [o, starts] {
            o->budgets.compiles_amortized_over = o->budgets.tunings_amortized_over = *starts;
            return specialize(*o, std::cout);
        };
    });
}

}  // namespace tessel::apps
