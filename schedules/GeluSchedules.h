/** \file
 * Hand-written schedules for the GELU(x @ w + bias) group (algorithms/Gelu.h).
 *
 * Each function returns a ScheduleSpec value addressing the algorithm's stage names
 * ("matmul", "y") and loop names ("n", "m", "k"). Parameters that depend on the target
 * (the f32 vector width) are read from the Halide target so one schedule serves AVX2
 * and AVX-512 alike.
 */
#pragma once

#include "algorithms/Gelu.h"
#include "schedules/ApplySchedule.h"
#include "schedules/Schedule.h"

namespace tessel::sched {

/** CPU: output tiles of 2 vectors x 8 rows; the matmul tile is accumulated in a small
 * stack buffer inside the output tile (its k loop outermost, so the 16 accumulators
 * stay in registers), bias and GELU run on the tile right after, row tiles in parallel.
 * Every split guards its tail, so any M, K, N is correct. */
ScheduleSpec gelu_cpu_tiled(const Halide::Target &target);

/** The stages of a GeluMlp by the names schedules use. */
ScheduleTarget schedule_target(const GeluMlp &alg, const Halide::Target &target);

}  // namespace tessel::sched
