/** \file
 * Registration of `tessel` subcommands; each sets `action` when it is selected. */
#pragma once

#include "autoscheduler/SpecializationPlanner.h"

#include <CLI/CLI.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tessel::apps {

/** --max-kernels N: distinct kernels compiled at most (compiler/CompileBudget.h). */
void add_max_kernels_option(CLI::App *cmd, int64_t &max_kernels);

void add_demo_command(CLI::App &app, std::function<int()> &action);
void add_schedules_command(CLI::App &app, std::function<int()> &action);
void add_simplify_command(CLI::App &app, std::function<int()> &action);
void add_compile_command(CLI::App &app, std::function<int()> &action);
void add_run_command(CLI::App &app, std::function<int()> &action);
void add_tune_command(CLI::App &app, std::function<int()> &action);
void add_db_command(CLI::App &app, std::function<int()> &action);
void add_specialize_command(CLI::App &app, std::function<int()> &action);
void add_lib_command(CLI::App &app, std::function<int()> &action);
void add_worker_command(CLI::App &app, std::function<int()> &action);
void add_jobs_command(CLI::App &app, std::function<int()> &action);

/** --dim items, "M=512" -> {"M", 512}; throws naming the bad item (not NAME=POSITIVE_INTEGER, a
 * name given twice, a size past 2^62). Shared by compile, run, tune and lib. */
std::map<std::string, int64_t> parse_dims(const std::vector<std::string> &items);

/** --budget-compile, --budget-tuning, --budget-code into `b` (shared by specialize and lib). */
void add_budget_options(CLI::App *cmd, autosched::PlannerBudgets &b);

}  // namespace tessel::apps
