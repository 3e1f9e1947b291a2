/** \file
 * The running example as graph text with every dim symbolic (M, K, N), for tests that pick small
 * shapes: y = gelu(x @ w + bias).
 */
#pragma once

namespace tessel::testing {

inline constexpr const char *kGeluMlpText = R"(graph mlp {
  %x = input : f32[M, K]
  %w = input : f32[K, N]
  %bias = input : f32[N]
  %y = gelu(matmul(%x, %w) + %bias)
  output %y
}
)";

}  // namespace tessel::testing
