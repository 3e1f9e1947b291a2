/** \file
 * The one interleaved timing loop. Contenders (named callables) are called in rounds; every
 * round calls each running contender once, in an order drawn afresh per round (round_order), so
 * the machine's drift falls on all of them alike and no contender always follows the same one.
 * Warm-up rounds come first and are not recorded; a StoppingRule (a small value) ends the timed
 * rounds: a fixed count, or once the fastest is separated from every other at a confidence
 * (the paired sign test, compare_paired), or when a round or time budget is spent. The result
 * holds the samples of each contender by round (sample i of every contender from round i) and
 * gives the paired verdict.
 *
 * A contender is `void()` (the whole call is timed) or `void(Call &)`: the Call times only part
 * of it (`call.time(fn)`), takes a time the contender measured itself (`call.record(s)`), or
 * drops the contender (`call.fail(why)`: a failed run, a wrong result), which is never called
 * again. `before_call` runs untimed before every call (a cache flush, resetting outputs).
 * The clock is injectable (seconds, monotonic): the default is support/Clock.h's.
 *
 * Legal for any callables in one thread; the harness itself calls nothing concurrently. Callers
 * driven by another loop (Google Benchmark's iterations) call run_round() themselves.
 */
#pragma once

#include "support/Clock.h"
#include "support/Statistics.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessel {

/** Why the timed rounds ended. */
enum class StopReason {
    Rounds,       ///< the fixed number of rounds ran
    Separated,    ///< the fastest was separated from every other at the rule's confidence
    RoundBudget,  ///< max_rounds ran without separation
    TimeBudget,   ///< max_seconds were spent
    NoContenders  ///< none left running
};

inline const char *to_string(StopReason r) {
    switch (r) {
    case StopReason::Rounds: return "rounds";
    case StopReason::Separated: return "separated";
    case StopReason::RoundBudget: return "round-budget";
    case StopReason::TimeBudget: return "time-budget";
    case StopReason::NoContenders: return "no-contenders";
    }
    return "?";
}

/** When the timed rounds stop. `min_rounds` always run (unless the time budget is spent
 * first); with `confidence` > 0 the rule then asks, every `check_every` rounds, whether the
 * fastest is separated, and stops at `max_rounds` at the latest. `max_seconds` > 0 bounds the
 * whole measurement (warm-up included): it stops after the round that spends it. */
struct StoppingRule {
    int min_rounds = 1;
    int max_rounds = 1;
    double confidence = 0;  ///< 0: no early stop on separation
    int check_every = 1;
    double max_seconds = 0;  ///< 0: no time budget

    /** Exactly `rounds` timed rounds (at least 1). */
    static StoppingRule fixed(int rounds) {
        StoppingRule s;
        s.min_rounds = s.max_rounds = std::max(1, rounds);
        return s;
    }
    /** `min_rounds`, then until separated at `confidence` (tested every `check_every` rounds)
     * or `max_rounds`. */
    static StoppingRule until_separated(double confidence, int min_rounds, int max_rounds, int check_every = 1) {
        StoppingRule s;
        s.confidence = confidence;
        s.min_rounds = std::max(1, min_rounds);
        s.max_rounds = std::max(s.min_rounds, max_rounds);
        s.check_every = std::max(1, check_every);
        return s;
    }
    /** This rule with a time budget of `seconds`. */
    StoppingRule within_seconds(double seconds) const {
        StoppingRule s = *this;
        s.max_seconds = seconds;
        return s;
    }

    /** After `rounds` timed rounds and `elapsed` seconds: the reason to stop, or nullopt to go
     * on. `separated()` answers the paired test; it is asked only when the rule needs it. */
    template <typename Separated>
    std::optional<StopReason> after_round(int rounds, double elapsed, Separated &&separated) const {
        const int most = std::max(min_rounds, max_rounds);
        if (rounds >= min_rounds) {
            if (confidence <= 0) return StopReason::Rounds;
            if ((rounds - min_rounds) % std::max(1, check_every) == 0 && separated()) return StopReason::Separated;
            if (rounds >= most) return StopReason::RoundBudget;
        }
        if (max_seconds > 0 && elapsed >= max_seconds) return StopReason::TimeBudget;
        return std::nullopt;
    }
};

/** What one call of a contender may do besides running: see the file comment. */
class Call {
public:
    Call(size_t contender, uint64_t round, bool warming_up, const std::function<double()> &clock)
        : contender_(contender), round_(round), warming_up_(warming_up), clock_(clock) {}

    size_t contender() const { return contender_; }
    /** The round's index, warm-up rounds included (round_order's seed). */
    uint64_t round() const { return round_; }
    bool warming_up() const { return warming_up_; }

    /** Times `fn` as (part of) this call's sample; the rest of the call is not timed. */
    template <typename Fn>
    void time(Fn &&fn) {
        const double t0 = clock_();
        fn();
        seconds_ += clock_() - t0;
        timed_ = true;
    }
    /** Adds a time the contender measured itself to this call's sample. */
    void record(double seconds) {
        seconds_ += seconds;
        timed_ = true;
    }
    /** Drops the contender: no sample this round, never called again. */
    void fail(std::string why) { failure_ = why.empty() ? std::string("failed") : std::move(why); }

    bool timed() const { return timed_; }
    double seconds() const { return seconds_; }
    const std::optional<std::string> &failure() const { return failure_; }

private:
    size_t contender_;
    uint64_t round_;
    bool warming_up_;
    const std::function<double()> &clock_;
    bool timed_ = false;
    double seconds_ = 0;
    std::optional<std::string> failure_;
};

/** A named callable: `void()` or `void(Call &)`. */
struct Contender {
    std::string name;
    std::function<void(Call &)> run;

    template <typename Fn>
    Contender(std::string n, Fn fn) : name(std::move(n)) {
        if constexpr (std::is_invocable_v<Fn &, Call &>)
            run = std::move(fn);
        else
            run = [fn = std::move(fn)](Call &) mutable { fn(); };
    }
};

struct InterleavedOptions {
    int warmup_rounds = 1;  ///< untimed rounds first, in drawn orders like the rest
    StoppingRule stop = StoppingRule::fixed(5);
    /** Untimed, before every call (warm-up included), with the contender's index. */
    std::function<void(size_t)> before_call;
    /** Seconds, monotonic. */
    std::function<double()> clock = steady_seconds;
};

/** The samples and the verdict of one interleaved measurement. */
struct InterleavedResult {
    std::vector<std::string> names;
    std::vector<std::vector<double>> samples;  ///< [contender][timed round], seconds
    std::vector<std::string> failures;         ///< why a contender was dropped; "" while it runs
    int rounds = 0;                            ///< timed rounds run
    double seconds = 0;                        ///< the whole measurement, warm-up included
    StopReason stopped = StopReason::Rounds;

    bool failed(size_t c) const { return !failures[c].empty(); }
    /** Median seconds of contender `c`; NaN without samples. */
    double median(size_t c) const { return ::tessel::median(samples[c]); }
    /** The running contender with the smallest median; size() of names when none has samples. */
    size_t fastest() const {
        size_t lead = names.size();
        for (size_t c = 0; c < names.size(); c++)
            if (!failed(c) && !samples[c].empty() && (lead == names.size() || median(c) < median(lead))) lead = c;
        return lead;
    }
    /** The paired verdict of `a` against `b` over the rounds both ran. */
    PairedComparison versus(size_t a, size_t b) const { return compare_paired(samples[a], samples[b]); }
    /** The fastest is separated at `confidence` from every other running contender (true with
     * fewer than two running). */
    bool fastest_separated(double confidence) const {
        const size_t lead = fastest();
        for (size_t c = 0; c < names.size(); c++)
            if (c != lead && !failed(c) && (lead == names.size() || !versus(lead, c).separated(confidence))) return false;
        return true;
    }
};

class Interleaved {
public:
    explicit Interleaved(std::vector<Contender> contenders, InterleavedOptions options = {})
        : contenders_(std::move(contenders)), o_(std::move(options)) {
        if (!o_.clock) o_.clock = steady_seconds;
        for (const auto &c : contenders_) r_.names.push_back(c.name);
        r_.samples.resize(contenders_.size());
        r_.failures.resize(contenders_.size());
    }

    /** Warm-up, then timed rounds until the stopping rule (or no running contender) ends them. */
    const InterleavedResult &run() {
        warm_up();
        for (;;) {
            if (running() == 0) {
                r_.stopped = StopReason::NoContenders;
                break;
            }
            run_round();
            const auto stop =
                o_.stop.after_round(r_.rounds, r_.seconds, [&] { return r_.fastest_separated(o_.stop.confidence); });
            if (stop) {
                r_.stopped = *stop;
                break;
            }
        }
        return r_;
    }

    /** The warm-up rounds, once (run() and the first run_round() call it). */
    void warm_up() {
        if (warmed_) return;
        warmed_ = true;
        start_ = o_.clock();
        for (int w = 0; w < o_.warmup_rounds; w++) round(true);
    }

    /** One timed round; returns the sum of its samples (seconds). */
    double run_round() {
        warm_up();
        const double sum = round(false);
        r_.rounds++;
        return sum;
    }

    const InterleavedResult &result() const { return r_; }
    size_t running() const {
        size_t n = 0;
        for (size_t c = 0; c < contenders_.size(); c++) n += !r_.failed(c);
        return n;
    }

private:
    std::vector<Contender> contenders_;
    InterleavedOptions o_;
    InterleavedResult r_;
    uint64_t round_ = 0;  ///< rounds drawn, warm-up included
    bool warmed_ = false;
    double start_ = 0;

    double round(bool warming_up) {
        double sum = 0;
        const uint64_t index = round_++;
        for (const size_t c : round_order(contenders_.size(), index)) {
            if (r_.failed(c)) continue;
            if (o_.before_call) o_.before_call(c);
            Call call(c, index, warming_up, o_.clock);
            const double t0 = o_.clock();
            contenders_[c].run(call);
            const double whole = o_.clock() - t0;
            if (call.failure()) {
                r_.failures[c] = *call.failure();
                continue;
            }
            if (warming_up) continue;
            const double t = call.timed() ? call.seconds() : whole;
            r_.samples[c].push_back(t);
            sum += t;
        }
        r_.seconds = o_.clock() - start_;
        return sum;
    }
};

/** Seconds per call of `fn`: the median of `repeats` timed calls after one warm-up call
 * (first-touch page faults, thread pool start-up); the harness with one contender. */
template <typename Fn>
double median_seconds(Fn &&fn, int repeats) {
    InterleavedOptions o;
    o.warmup_rounds = 1;
    o.stop = StoppingRule::fixed(repeats);
    Interleaved h({Contender("fn", [&fn] { fn(); })}, o);
    return h.run().median(0);
}

}  // namespace tessel
