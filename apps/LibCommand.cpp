#include "apps/Commands.h"
#include "driver/KernelLibrary.h"

#include <iostream>

namespace tessel::apps {

void add_lib_command(CLI::App &app, std::function<int()> &action) {
    auto o = std::make_shared<KernelLibraryOptions>();
    auto dims = std::make_shared<std::vector<std::string>>();
    CLI::App *cmd = app.add_subcommand("lib",
                                       "Write one static library and C header for a whole graph: an entry "
                                       "point with argument checks, a memory-planned workspace and guard dispatch");
    cmd->add_option("file", o->file, "graph file (.tsl)")->required()->check(CLI::ExistingFile);
    cmd->add_option("-o,--out", o->out_dir, "output directory")->capture_default_str();
    cmd->add_option("--name", o->name, "library and entry name (default: the graph's name)");
    cmd->add_option("--target", o->target,
                    "a CPU target, a comma list of them, or x86-multi (AVX-512, AVX2, "
                    "x86-64; picked by the CPU's features at run time)")
        ->capture_default_str();
    cmd->add_option("--schedule", o->schedule,
                    "library schedule NAME or FILE.json for the groups of its kind "
                    "(default: the tuning database where --dim gives every size of a group, "
                    "else each kind's library schedule)");
    cmd->add_option("--db", o->db, "tuning database consulted when no schedule is named (a SQLite file or postgresql://...)")
        ->capture_default_str();
    cmd->add_option("--dim", *dims, "symbol sizes for fusion estimates, rematerialization and database lookups, e.g. --dim M=512")
        ->delimiter(',');
    cmd->add_flag("!--no-remat", o->remat, "keep every value: no rematerialization");
    add_max_kernels_option(cmd, o->max_compiled_kernels);
    cmd->add_flag("--enqueue", o->enqueue,
                  "with --profile and --db postgresql://...: groups whose variant costs the server lacks become jobs for "
                  "`tessel worker`s instead of being measured here (no library written until they are done)");
    cmd->add_flag("--wait", o->wait, "with --enqueue: wait for the workers, then write the library");
    cmd->add_option("--profile", o->profile_file,
                    "shape profile (lines 'M=1 calls=12000' binding the graph's symbols, as "
                    "TESSEL_LIB_PROFILE records them): measure every group's variants and keep "
                    "those the planner chooses")
        ->check(CLI::ExistingFile);
    add_budget_options(cmd, o->budgets);
    auto runs = std::make_shared<double>(1);
    cmd->add_option("--runs-per-build", *runs,
                    "runs of the profile served by one build of the library (compile "
                    "time is amortized over them)")
        ->capture_default_str()
        ->check(CLI::Range(1.0, 1e12));
    cmd->add_option("--repeats", o->repeats, "timed rounds per profiled shape")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000));
    cmd->callback([&action, o, dims, runs] {
        action = [o, dims, runs] {
            o->budgets.compiles_amortized_over = o->budgets.tunings_amortized_over = *runs;
            for (const auto &[name, size] : parse_dims(*dims)) o->symbols[name] = size;
            return write_kernel_library(*o, std::cout);
        };
    });
}

}  // namespace tessel::apps
