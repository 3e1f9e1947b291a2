/** \file
 * ElementwiseProgram: an elementwise fusion group as a register program that the runtime
 * interprets (runtime/tessel_program.c) instead of code compiled for it. It is how a graph of
 * many distinct small kernels stays within its compile budget: a program costs nothing to
 * compile, runs slower than compiled code, and computes what the reference interpreter
 * computes, bit for bit (each op in double, rounded to f32). The planner decides which groups
 * run as programs (compiler/Plan.h, PlanOptions::max_compiled_kernels); a group does when its
 * schedule says so (sched::ScheduleSpec::program), on every road: `tessel run` interprets it in
 * process, and libraries hold its program as data with a function of the kernel's signature
 * (codegen/ProgramFunctions.h).
 *
 * Legal for a group of kind elementwise whose members are f32 elementwise and broadcast ops
 * (arithmetic, comparisons, where, the unary functions, copy, casts to f32, scalar constants),
 * whose arguments are f32 and row-major, whose outputs all have one shape, and whose every
 * member broadcasts to that shape (so computing it at every output element is computing it).
 *
 * Text form (`tessel compile --emit stmt`, tests):
 *   program g3_y (x, b -> y): 3 registers
 *     r2 = const 2
 *     r2 = mul r0, r2
 *     r2 = add r2, r1
 *     y = r2
 */
#pragma once

#include "dsl/ir/Graph.h"
#include "dsl/passes/Fusion.h"

#include <tessel_runtime.h>

#include <optional>
#include <string>
#include <vector>

struct halide_buffer_t;

namespace tessel::lower {

struct ElementwiseProgram {
    std::string name;
    int input_count = 0, output_count = 0, register_count = 0;
    std::vector<std::string> argument_names;  ///< inputs then outputs, for the text form
    std::vector<tessel_program_step> steps;
    std::vector<int32_t> output_registers;

    /** The runtime's view of it (points into this object). */
    tessel_program view() const;
    std::string to_string() const;
};

/** Why `group` cannot run as an elementwise program, or nullopt when it can. */
std::optional<std::string> program_refusal(const dsl::Graph &g, const dsl::FusionGroup &group);

/** The program of `group` over the kernel's arguments: `inputs` (values read, in argument order)
 * and `outputs` (in argument order); `names` are the arguments' names (inputs, then outputs).
 * Throws LoweringError when program_refusal says no. */
ElementwiseProgram build_program(const dsl::Graph &g, const dsl::FusionGroup &group, const std::vector<dsl::ValueId> &inputs,
                                 const std::vector<dsl::ValueId> &outputs, std::vector<std::string> names);

/** Runs it over `buffers` (inputs, then outputs); throws std::runtime_error with the runtime's
 * message (the argument and both shapes) when a buffer does not fit. */
void run_program(const ElementwiseProgram &program, const std::vector<halide_buffer_t *> &buffers);

}  // namespace tessel::lower
