#include "apps/Commands.h"
#include "codegen/Compile.h"
#include "driver/Demo.h"
#include "schedules/Library.h"

#include <iomanip>
#include <iostream>

namespace tessel::apps {

void add_demo_command(CLI::App &app, std::function<int()> &action) {
    auto o = std::make_shared<DemoOptions>();
    auto form = std::make_shared<std::string>("tanh");
    auto mode = std::make_shared<std::string>("strict");
    CLI::App *cmd = app.add_subcommand("demo",
                                       "Compile GELU(x @ w + bias), verify it against a float64 reference "
                                       "and OpenBLAS, time it; check the CUDA variant's PTX with ptxas");
    cmd->add_option("-M", o->M, "rows of x and y")->capture_default_str()->check(CLI::Range(1, 1 << 24));
    cmd->add_option("-K", o->K, "columns of x, rows of w")->capture_default_str()->check(CLI::Range(1, 1 << 24));
    cmd->add_option("-N", o->N, "columns of w and y")->capture_default_str()->check(CLI::Range(1, 1 << 24));
    cmd->add_option("--gelu", *form, "GELU form")->capture_default_str()->check(CLI::IsMember({"tanh", "erf"}));
    cmd->add_option("--mode", *mode, "numeric mode (fast allows rewrites that change rounding)")
        ->capture_default_str()
        ->check(CLI::IsMember({"exact", "strict", "fast"}));
    cmd->add_option("--target", o->target, "host, host-cuda or a Halide target string")->capture_default_str();
    cmd->add_option("--schedule", o->cpu_schedule,
                    "CPU schedule: auto (tuning database, else the autoscheduler's "
                    "model pick), a library name, or FILE.json")
        ->capture_default_str();
    cmd->add_option("--db", o->db, "tuning database (a SQLite file or postgresql://...)")->capture_default_str();
    cmd->add_option("--kernel-cache", o->kernel_cache,
                    "compiled kernels kept on disk: DIR, or off (default: "
                    "<db>.kernels, next to the tuning database)");
    cmd->add_flag("--tune", o->tune, "with --schedule auto: on a database miss, measure candidates");
    cmd->add_option("--cuda-schedule", o->cuda_schedule, "CUDA library schedule")->capture_default_str();
    cmd->add_option("--repeats", o->repeats, "timed repetitions")->capture_default_str()->check(CLI::Range(1, 100000));
    cmd->add_flag("!--no-cuda", o->cuda, "skip the CUDA PTX check");
    cmd->callback([&action, o, form, mode] {
        action = [o, form, mode] {
            o->form = parse_gelu_form(*form);
            o->mode = dsl::parse_numeric_mode(*mode);
            return run_demo(*o, std::cout);
        };
    });
}

void add_schedules_command(CLI::App &app, std::function<int()> &action) {
    auto verbose = std::make_shared<bool>(false);
    auto target = std::make_shared<std::string>("host");
    CLI::App *cmd = app.add_subcommand("schedules", "List the library of hand-written schedules");
    cmd->add_flag("-v,--verbose", *verbose, "print every schedule's directives");
    cmd->add_option("--target", *target, "target whose vector width parameterizes the schedules");
    cmd->callback([&action, verbose, target] {
        action = [verbose, target] {
            const Halide::Target t = tessel::parse_target(*target);
            for (const auto &e : sched::schedule_library()) {
                std::cout << std::left << std::setw(19) << e.name << std::setw(6) << sched::to_string(e.device) << std::setw(18)
                          << dsl::to_string(e.group) << e.summary << "\n";
                if (!*verbose) continue;
                if (e.group_generic()) {
                    // Generated per group: shown for a representative one.
                    std::cout << "  (generated for each " << dsl::to_string(e.group) << " group; shown for "
                              << (e.group == dsl::GroupKind::Reduction ? "softmax over rows" : "one rank-2 output") << ")\n"
                              << sched::to_string(e.build_for_group(sched::example_group_shape(e.group), t)) << "\n";
                } else {
                    std::cout << sched::to_string(e.build(t)) << "\n";
                }
            }
            return 0;
        };
    });
}

}  // namespace tessel::apps
