/** \file
 * The running example as graph text with every dim symbolic (M, K, N), for tests that pick small
 * shapes: y = gelu(x @ w + bias).
 */
#pragma once

#include "schedules/Schedule.h"

#include <string>

namespace tessel::testing {

inline constexpr const char *kGeluMlpText = R"(graph mlp {
  %x = input : f32[M, K]
  %w = input : f32[K, N]
  %bias = input : f32[N]
  %y = gelu(matmul(%x, %w) + %bias)
  output %y
}
)";

/** A small valid schedule of that layer's group: quick to JIT, so measurer tests' timeouts can
 * stay short. */
inline sched::ScheduleSpec small_gelu_schedule(const std::string &name) {
    sched::ScheduleSpec s(name);
    s.split(sched::StageRef{"y"}, "n", "no", "ni", 8, sched::Tail::GuardWithIf)
        .vectorize(sched::StageRef{"y"}, "ni")
        .compute_at("matmul", "y", "m");
    return s;
}

}  // namespace tessel::testing
