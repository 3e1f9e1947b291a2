#include "apps/Commands.h"
#include "driver/DatabaseCommands.h"
#include "driver/HalideAutoschedulers.h"
#include "driver/Tune.h"
#include "schedules/Library.h"

#include <iostream>

namespace tessel::apps {

namespace {

/** --compare: the tuned schedule against the library and Halide's autoschedulers on the same
 * planned group of the graph being tuned, in the same run. */
void compare_with_halide(const dsl::Graph &g, const dsl::FusionGroup &group, const std::map<std::string, int64_t> &symbols,
                         const autosched::TuneResult &r, int rounds, std::ostream &out) {
    autosched::CompareOptions c;
    c.target = Halide::Target(r.key.target);
    c.repeats = rounds;
    c.tessel_specs = {{"tuned", r.schedule}};
    if (group.kind != dsl::GroupKind::MatmulEpilogue)  // the library's schedule for this kind, not cpu_blocked
        c.tessel_schedules = {
            sched::default_library_schedule(group.kind, c.target.has_gpu_feature() ? sched::Device::Cuda : sched::Device::Cpu)};
    out << "\ncomparison in the same run:\n";
    autosched::compare_autoschedulers(g, group, {symbols}, out, c);
}

}  // namespace

void add_tune_command(CLI::App &app, std::function<int()> &action) {
    auto o = std::make_shared<TuneOptions>();
    auto no_measure = std::make_shared<bool>(false);
    CLI::App *cmd = app.add_subcommand("tune",
                                       "Autoschedule every group of a graph (matmul+epilogue, elementwise, "
                                       "reductions): prune, rank with the cost model, measure the top candidates "
                                       "in isolated processes, store the winner in the tuning database, report "
                                       "coverage per shape class");
    cmd->add_option("file", o->file, "graph file (.tsl)")->required()->check(CLI::ExistingFile);
    cmd->add_option("--shapes", o->shapes,
                    "MxKxN shapes, comma-separated (default: the graph's fixed shape, else "
                    "the suite shapes that fit it)")
        ->delimiter(',');
    auto dims = std::make_shared<std::vector<std::string>>();
    cmd->add_option("--dim", *dims,
                    "symbol sizes for every shape, e.g. --dim S=128 (what MxKxN does not bind; the "
                    "shapes' M, K, N also bind symbols of those names in other groups)")
        ->delimiter(',');
    cmd->add_option("--suite", o->suite, "shape suite file (default: bench/shapes.txt of this checkout)");
    cmd->add_option("--budget", o->params.budget, "candidates measured per shape")
        ->capture_default_str()
        ->check(CLI::Range(1, 10000));
    cmd->add_option("--repeats", o->params.repeats, "timed runs per candidate")
        ->capture_default_str()
        ->check(CLI::Range(1, 10000));
    cmd->add_option("--timeout", o->params.timeout_seconds, "seconds per candidate (compile included), > 0")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    cmd->add_flag("!--no-verify", o->params.verify, "do not check candidates' results against the library schedule");
    cmd->add_option("--db", o->db, "tuning database: a SQLite file or postgresql://user@host:port/dbname")->capture_default_str();
    cmd->add_option("--target", o->target, "host, host-cuda or a Halide target string")->capture_default_str();
    cmd->add_flag("--explain", o->explain, "print each term of the cost estimate for the top candidates");
    cmd->add_flag("--model-only", *no_measure, "rank with the cost model only; measure nothing");
    cmd->add_flag("--enqueue", o->enqueue,
                  "write one job per group and shape to the server's queue (--db postgresql://...) instead of measuring "
                  "here; `tessel worker`s measure them");
    cmd->add_option("--machine-class", o->machine_class,
                    "with --enqueue: only workers whose machine identity is this measure the jobs (default: any host of "
                    "the target)");
    cmd->add_flag("--wait", o->wait,
                  "with --enqueue: wait until the workers have done every job, then report the results (database hits)");
    cmd->add_option("--max-attempts", o->max_attempts, "with --enqueue: a job failing this often is marked failed")
        ->capture_default_str()
        ->check(CLI::Range(1, 100));
    cmd->add_flag("!--no-coverage", o->coverage, "skip the coverage report");
    auto compare = std::make_shared<bool>(false);
    auto compare_rounds = std::make_shared<int>(autosched::CompareOptions{}.repeats);
    cmd->add_flag("--compare", *compare,
                  "after each shape, time the tuned schedule, the library's cpu_blocked and "
                  "Halide's autoschedulers in the same run");
    cmd->add_option("--compare-rounds", *compare_rounds,
                    "timed rounds of --compare (each calls every contender once; "
                    "the tuned-vs-library verdict is a sign test over them)")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000));
    cmd->callback([&action, o, no_measure, compare, compare_rounds, dims] {
        action = [o, no_measure, compare, compare_rounds, dims] {
            o->dims = parse_dims(*dims);
            o->params.measure = !*no_measure;
            if (*compare)
                o->after_each = [rounds = *compare_rounds](const dsl::Graph &g, const dsl::FusionGroup &group,
                                                           const std::map<std::string, int64_t> &symbols,
                                                           const autosched::Workload &, const autosched::TuneResult &r,
                                                           std::ostream &out) {
                    compare_with_halide(g, group, symbols, r, rounds, out);
                };
            return run_tune(*o, std::cout);
        };
    });
}

void add_db_command(CLI::App &app, std::function<int()> &action) {
    auto path = std::make_shared<std::string>("tessel-tuning.db");
    auto file = std::make_shared<std::string>("-");
    CLI::App *cmd =
        app.add_subcommand("db", "Inspect, export or import the tuning database; measure this machine for the cost model");
    cmd->require_subcommand(1);
    CLI::App *ls = cmd->add_subcommand("ls", "one line per record");
    CLI::App *ex = cmd->add_subcommand("export", "write every record as JSON");
    ex->add_option("file", *file, "output file, '-' for standard output")->capture_default_str();
    CLI::App *im = cmd->add_subcommand("import", "read records from JSON (idempotent)");
    im->add_option("file", *file, "input file, '-' for standard input")->required();
    auto target = std::make_shared<std::string>("host");
    auto from = std::make_shared<std::string>();
    CLI::App *pull = cmd->add_subcommand("pull", "copy every record of another database (file or server) into --db (idempotent)");
    pull->add_option("--from", *from, "the database to copy from: a SQLite file or postgresql://...")->required();
    auto layouts = std::make_shared<bool>(true);
    CLI::App *probe = cmd->add_subcommand("probe",
                                          "measure this machine's FMA peak and cold read bandwidth (about a second) for the cost "
                                          "model and the layout pass's rates (about 15 s), and store them");
    probe->add_option("--target", *target, "the CPU target whose vector width the probe runs")->capture_default_str();
    probe->add_flag("!--no-layouts", *layouts, "skip the layout rates (plans keep the ones stored, or the defaults)");
    for (CLI::App *sub : {ls, ex, im, pull, probe})
        sub->add_option("--db", *path, "tuning database: a SQLite file or postgresql://user@host:port/dbname")
            ->capture_default_str();
    pull->callback([&action, path, from] { action = [path, from] { return db_pull(*from, *path, std::cout); }; });
    probe->callback(
        [&action, path, target, layouts] { action = [path, target, layouts] { return db_probe(*path, *target, *layouts); }; });
    ls->callback([&action, path] { action = [path] { return db_list(*path, std::cout); }; });
    ex->callback([&action, path, file] { action = [path, file] { return db_export(*path, *file); }; });
    im->callback([&action, path, file] { action = [path, file] { return db_import(*path, *file); }; });
}

}  // namespace tessel::apps
