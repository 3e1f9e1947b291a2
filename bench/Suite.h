/** \file
 * The benchmark's shape suite, read from a text file kept in the repository
 * (bench/shapes.txt): one `name kind M K N` per line, `#` starts a comment.
 */
#pragma once

#include <string>
#include <vector>

namespace tessel::bench {

/** What a shape is measured against: the FMA peak (compute) or memory bandwidth (decode). */
enum class ShapeKind { Compute, Decode };

struct BenchShape {
    std::string name;
    ShapeKind kind = ShapeKind::Compute;
    int M = 0, K = 0, N = 0;

    double flops() const { return 2.0 * M * K * N; }
    /** Bytes a kernel must move at least once: w, x, bias read and y written. */
    double min_bytes() const { return 4.0 * ((double)K * N + (double)M * K + N + (double)M * N); }
    std::string dims() const;  ///< "MxKxN"
};

/** Reads a suite file; throws std::runtime_error naming the file and line on a bad line. */
std::vector<BenchShape> load_suite(const std::string &path);

}  // namespace tessel::bench
