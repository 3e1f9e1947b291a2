#include "apps/Commands.h"
#include "driver/GraphCompiler.h"
#include "dsl/ir/Types.h"

#include <iostream>

namespace tessel::apps {

namespace {

/** --no-remat and --memory-budget BYTES (dsl/passes/Rematerialize.h). */
void add_memory_options(CLI::App *cmd, bool &remat, std::optional<int64_t> &budget) {
    cmd->add_flag("!--no-remat", remat, "keep every value: no rematerialization");
    cmd->add_option("--memory-budget", budget,
                    "bytes the planned arena may take; values are recomputed, cheapest "
                    "per byte first, until it fits (or the miss is reported)")
        ->check(CLI::PositiveNumber);
}

/** --donate NAME,...: inputs whose storage the call gives up (dsl/analysis/BufferAssignment.h). */
void add_donate_option(CLI::App *cmd, std::set<std::string> &donated) {
    cmd->add_option("--donate", donated,
                    "inputs whose storage the memory plan may overwrite, e.g. --donate k_cache,v_cache "
                    "(in-place updates; a cache write then writes only its new positions)")
        ->delimiter(',');
}

}  // namespace

void add_max_kernels_option(CLI::App *cmd, int64_t &max_kernels) {
    cmd->add_option("--max-kernels", max_kernels,
                    "distinct kernels compiled at most; past it the elementwise groups with the least work run as "
                    "elementwise programs, interpreted by the runtime (-1: no limit)")
        ->capture_default_str();
}

std::map<std::string, int64_t> parse_dims(const std::vector<std::string> &items) {
    std::map<std::string, int64_t> dims;
    for (const auto &item : items) {
        const auto eq = item.find('=');
        try {
            if (eq == std::string::npos || eq == 0) throw std::invalid_argument("");
            size_t used = 0;
            const int64_t v = std::stoll(item.substr(eq + 1), &used);
            if (used != item.size() - eq - 1 || v <= 0 || v > dsl::kMaxElements) throw std::invalid_argument("");
            if (!dims.emplace(item.substr(0, eq), v).second) throw std::invalid_argument("");
        } catch (const std::exception &) {
            throw std::invalid_argument("--dim '" + item +
                                        "': expected NAME=POSITIVE_INTEGER (each name once, at most 2^62), e.g. M=512");
        }
    }
    return dims;
}

void add_compile_command(CLI::App &app, std::function<int()> &action) {
    auto o = std::make_shared<GraphCompileOptions>();
    auto emit = std::make_shared<std::vector<std::string>>();
    auto dims = std::make_shared<std::vector<std::string>>();
    CLI::App *cmd = app.add_subcommand("compile", "Simplify, fuse, lower and compile a graph (.tsl) ahead of time");
    cmd->add_option("file", o->file, "graph file (.tsl)")->required()->check(CLI::ExistingFile);
    cmd->add_option("--target", o->target, "host, host-cuda or a Halide target string")->capture_default_str();
    cmd->add_option("-o,--out", o->out_dir, "output directory")->capture_default_str();
    std::string kinds;
    for (const auto &k : graph_emit_kinds()) kinds += (kinds.empty() ? "" : ", ") + k;
    cmd->add_option("--emit", *emit, "what to write (comma-separated): " + kinds + " [default: lib]")
        ->delimiter(',')
        ->check(CLI::IsMember(std::vector<std::string>(graph_emit_kinds().begin(), graph_emit_kinds().end())));
    cmd->add_option("--schedule", o->schedule,
                    "library schedule NAME or FILE.json for matmul+epilogue groups "
                    "(default: tuning database, else autoscheduler, else library)");
    cmd->add_option("--dim", *dims, "symbol sizes, e.g. --dim M=512 (with every size known the autoscheduler applies)")
        ->delimiter(',');
    cmd->add_option("--db", o->db, "tuning database (a SQLite file or postgresql://...)")->capture_default_str();
    cmd->add_option("--compile-budget", o->compile_budget_seconds,
                    "seconds the compile may take; past it, stop cleanly with what is written and exit with status 3")
        ->check(CLI::PositiveNumber);
    cmd->add_flag("--time-report", o->time_report, "print where the compile's time went, phase by phase");
    cmd->add_flag("--tune", o->tune, "on a database miss, measure candidates instead of taking the model's pick");
    add_memory_options(cmd, o->remat, o->memory_budget);
    add_max_kernels_option(cmd, o->max_compiled_kernels);
    add_donate_option(cmd, o->donated);
    cmd->add_flag("--schedule-fallback", o->schedule_fallback,
                  "where the --schedule does not apply to a group, use the default schedule instead of failing");
    cmd->callback([&action, o, emit, dims] {
        action = [o, emit, dims] {
            if (!emit->empty()) o->emit = std::set<std::string>(emit->begin(), emit->end());
            o->symbols = parse_dims(*dims);
            return compile_graph(*o, std::cout);
        };
    });
}

void add_run_command(CLI::App &app, std::function<int()> &action) {
    auto o = std::make_shared<GraphRunOptions>();
    auto dims = std::make_shared<std::vector<std::string>>();
    CLI::App *cmd = app.add_subcommand("run",
                                       "Run a graph (.tsl) on random inputs on the CPU and compare every "
                                       "output with the reference interpreter");
    cmd->add_option("file", o->file, "graph file (.tsl)")->required()->check(CLI::ExistingFile);
    cmd->add_option("--dim", *dims, "symbol sizes, e.g. --dim M=7,K=33 (unbound symbols are 64)")->delimiter(',');
    cmd->add_option("--seed", o->seed, "seed of the random inputs")->capture_default_str();
    cmd->add_option("--schedule", o->schedule,
                    "library schedule NAME or FILE.json for matmul+epilogue groups "
                    "(default: tuning database, else the autoscheduler's model pick)");
    cmd->add_option("--db", o->db, "tuning database (a SQLite file or postgresql://...)")->capture_default_str();
    cmd->add_option("--kernel-cache", o->kernel_cache,
                    "compiled kernels kept on disk: DIR, or off (default: "
                    "<db>.kernels, next to the tuning database)");
    cmd->add_flag("--tune", o->tune, "on a database miss, measure candidates instead of taking the model's pick");
    cmd->add_option("--target", o->target, "a CPU target")->capture_default_str();
    cmd->add_option("--tolerance", o->tolerance, "max relative error")->capture_default_str();
    add_memory_options(cmd, o->remat, o->memory_budget);
    add_max_kernels_option(cmd, o->max_compiled_kernels);
    add_donate_option(cmd, o->donated);
    cmd->add_flag("--schedule-fallback", o->schedule_fallback,
                  "where the --schedule does not apply to a group, use the default schedule instead of failing");
    cmd->callback([&action, o, dims] {
        action = [o, dims] {
            o->symbols = parse_dims(*dims);
            return run_graph(*o, std::cout);
        };
    });
}

}  // namespace tessel::apps
