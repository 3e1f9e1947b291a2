/** \file
 * A Measurer for tests of the tuner: times come from a formula of the schedule, nothing runs. */
#pragma once

#include "autoscheduler/Measurer.h"

#include <functional>
#include <vector>

namespace tessel::autosched {

/** A measurer that returns times from a formula instead of running anything. */
class FakeMeasurer : public Measurer {
public:
    std::function<double(const sched::ScheduleSpec &)> time_ms;
    int calls = 0;
    std::vector<Measurement> measure(const MeasureTask &, const std::vector<sched::ScheduleSpec> &candidates,
                                     const ProgressFn &) override {
        std::vector<Measurement> out;
        for (const auto &c : candidates) {
            calls++;
            Measurement m;
            m.median_ms = time_ms(c);
            m.samples = {m.median_ms};
            out.push_back(m);
        }
        return out;
    }
    /** Ten rounds of the formula's time: equal times tie, different ones separate. */
    std::vector<Measurement> measure_interleaved(const MeasureTask &,
                                                 const std::vector<sched::ScheduleSpec> &candidates) override {
        std::vector<Measurement> out;
        for (const auto &c : candidates) {
            interleaved_calls++;
            Measurement m;
            m.median_ms = time_ms(c);
            m.samples.assign(10, m.median_ms);
            out.push_back(m);
        }
        return out;
    }
    int interleaved_calls = 0;
};

}  // namespace tessel::autosched
