// Measurer.cpp
//   IsolatedMeasurer::measure_one  fork + exec tessel-measure (own process group, address-space
//                                  limit, parent-death signal), feed it JSON, collect stdout/stderr
//                                  under a deadline and an output cap, classify the outcome
//   InProcessMeasurer::measure     run_measurement() in a loop
//   progress_bar / format_progress the text progress line
#include "autoscheduler/Measurer.h"

#include "schedules/ScheduleJson.h"
#include "support/HostLock.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>

extern char **environ;

namespace tessel::autosched {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

/** The last `lines` lines of `text`, for crash messages. */
std::string tail_lines(const std::string &text, int lines) {
    size_t pos = text.size();
    while (pos > 0 && (text[pos - 1] == '\n')) pos--;
    const size_t end = pos;
    for (int n = 0; n < lines && pos > 0; n++) {
        pos = text.rfind('\n', pos - 1);
        if (pos == std::string::npos) {
            pos = 0;
            break;
        }
    }
    return text.substr(pos == 0 ? 0 : pos + 1, end - (pos == 0 ? 0 : pos + 1));
}

Measurement outcome(Status s, std::string message) {
    Measurement m;
    m.status = s;
    m.message = std::move(message);
    return m;
}

/** Drives progress callbacks: best Ok median so far and the ETA from the mean time per candidate. */
class ProgressTracker {
public:
    ProgressTracker(const ProgressFn &fn, int total) : fn_(fn), total_(total), t0_(Clock::now()) {}
    void done(const Measurement &m) {
        done_++;
        if (m.ok() && (best_ == 0 || m.median_ms < best_)) best_ = m.median_ms;
        if (!fn_) return;
        const double elapsed = std::chrono::duration<double>(Clock::now() - t0_).count();
        fn_(done_, total_, best_, elapsed / done_ * (total_ - done_));
    }

private:
    const ProgressFn &fn_;
    int total_, done_ = 0;
    double best_ = 0;
    Clock::time_point t0_;
};

}  // namespace

int64_t default_child_memory_limit() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const int64_t physical = pages > 0 && page > 0 ? (int64_t)pages * page : 0;
    return std::max<int64_t>(physical, int64_t(8) << 30);
}

std::string find_measure_executable() {
    std::vector<fs::path> tries;
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        tries.push_back(self.parent_path() / "tessel-measure");
        tries.push_back(self.parent_path().parent_path() / "apps" / "tessel-measure");
        tries.push_back(self.parent_path().parent_path().parent_path() / "apps" / "tessel-measure");
    }
#ifdef TESSEL_MEASURE_BUILD_PATH
    tries.push_back(TESSEL_MEASURE_BUILD_PATH);
#endif
    for (const auto &p : tries)
        if (fs::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0) return p.string();
    return "";
}

IsolatedMeasurer::IsolatedMeasurer(std::string child_path, size_t max_output_bytes)
    : child_path_(std::move(child_path)), max_output_bytes_(max_output_bytes) {
    if (child_path_.empty()) child_path_ = find_measure_executable();
    if (child_path_.empty())
        throw std::runtime_error(
            "cannot find the tessel-measure executable (looked next to this program, in "
            "../apps/, and at the build path); build target 'tessel-measure'");
}

Measurement IsolatedMeasurer::measure_one(const MeasureTask &task, const sched::ScheduleSpec &candidate) const {
    const std::string request = nlohmann::json{{"task", to_json(task)}, {"schedule", sched::to_json(candidate)}}.dump();
    std::string out;
    if (auto failure = exchange(request, task.timeout_seconds, task.memory_limit_bytes, &out)) return *failure;
    try {
        return validate_measurement(measurement_from_json(nlohmann::json::parse(out)));
    } catch (const std::exception &e) {
        return outcome(Status::Crash, std::string("exited with status 0 without a result (") + e.what() + ")");
    }
}

std::vector<Measurement> IsolatedMeasurer::measure_interleaved(const MeasureTask &task,
                                                               const std::vector<sched::ScheduleSpec> &candidates) {
    nlohmann::json schedules = nlohmann::json::array();
    for (const auto &c : candidates) schedules.push_back(sched::to_json(c));
    const std::string request = nlohmann::json{{"task", to_json(task)}, {"schedules", schedules}}.dump();
    // Each candidate's compile and verification, then the rounds: the per-candidate timeout each.
    const double timeout = task.timeout_seconds * (double)(candidates.size() + 1);
    std::string out;
    if (auto failure = exchange(request, timeout, task.memory_limit_bytes, &out))
        return std::vector<Measurement>(candidates.size(), *failure);
    std::vector<Measurement> results;
    try {
        const nlohmann::json answer = nlohmann::json::parse(out);
        for (const auto &m : answer.at("measurements")) results.push_back(validate_measurement(measurement_from_json(m)));
    } catch (const std::exception &e) {
        return std::vector<Measurement>(
            candidates.size(), outcome(Status::Crash, std::string("exited with status 0 without results (") + e.what() + ")"));
    }
    if (results.size() != candidates.size())
        return std::vector<Measurement>(
            candidates.size(), outcome(Status::InvalidResult, "the child answered for " + std::to_string(results.size()) +
                                                                  " of " + std::to_string(candidates.size()) + " candidates"));
    return results;
}

std::optional<Measurement> IsolatedMeasurer::exchange(const std::string &request, double timeout_seconds,
                                                      int64_t memory_limit_bytes, std::string *answer) const {
    // One measuring child per host at a time (support/HostLock.h): another tuner's or worker's
    // child timing on the same cores would inflate this one's medians several-fold. The child's
    // deadline starts once the lock is held.
    const HostLock lock(measuring_lock_path());
    // stdin is a socket so that writing to a child that already died gives EPIPE, not SIGPIPE.
    int in_sock[2], out_pipe[2], err_pipe[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in_sock) != 0)
        return outcome(Status::Crash, std::string("socketpair failed: ") + std::strerror(errno));
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
        return outcome(Status::Crash, std::string("pipe failed: ") + std::strerror(errno));

    // Everything the child needs is prepared before fork: between fork and exec it may only make
    // async-signal-safe calls (the tuner has threads: OpenMP, Halide's JIT).
    std::string path = child_path_;
    char *argv[] = {path.data(), nullptr};
    const pid_t parent = getpid();
    const rlim_t as_limit = kAddressSpaceLimits && memory_limit_bytes > 0 ? (rlim_t)memory_limit_bytes : RLIM_INFINITY;
    const pid_t pid = fork();
    if (pid == 0) {
        // Own process group: the timeout kills Halide's and OpenMP's threads' process and
        // anything it started. Parent death kills it too (PR_SET_PDEATHSIG); if the parent died
        // before that call, getppid() is no longer the parent and the child leaves at once.
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(125);
        if (as_limit != RLIM_INFINITY) {
            const rlimit r{as_limit, as_limit};
            setrlimit(RLIMIT_AS, &r);
        }
        if (dup2(in_sock[1], STDIN_FILENO) < 0 || dup2(out_pipe[1], STDOUT_FILENO) < 0 || dup2(err_pipe[1], STDERR_FILENO) < 0)
            _exit(126);
        execve(path.c_str(), argv, environ);
        _exit(127);
    }
    const int spawn_errno = errno;
    if (pid > 0) setpgid(pid, pid);  // also here, so kill(-pid) works whichever runs first
    close(in_sock[1]);
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (pid < 0) {
        close(in_sock[0]);
        close(out_pipe[0]);
        close(err_pipe[0]);
        return outcome(Status::Crash, "cannot start " + path + ": " + std::strerror(spawn_errno));
    }

    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(std::max(0.01, timeout_seconds)));
    std::string out, err;
    size_t written = 0;
    int fds[3] = {in_sock[0], out_pipe[0], err_pipe[0]};
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    bool timed_out = false, flooded = false;
    while (fds[1] >= 0 || fds[2] >= 0) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        pollfd p[3];
        int n = 0, which[3];
        if (fds[0] >= 0) {
            p[n] = {fds[0], POLLOUT, 0};
            which[n++] = 0;
        }
        if (fds[1] >= 0) {
            p[n] = {fds[1], POLLIN, 0};
            which[n++] = 1;
        }
        if (fds[2] >= 0) {
            p[n] = {fds[2], POLLIN, 0};
            which[n++] = 2;
        }
        const int r = poll(p, n, (int)std::min<long long>(left, 1000));
        if (r < 0 && errno != EINTR) break;
        for (int i = 0; i < n && r > 0; i++) {
            if (!p[i].revents) continue;
            int &fd = fds[which[i]];
            if (which[i] == 0) {
                const ssize_t k = send(fd, request.data() + written, request.size() - written, MSG_NOSIGNAL);
                if (k > 0) written += (size_t)k;
                if (k < 0 && errno != EAGAIN && errno != EINTR) written = request.size();  // child gone
                if (written == request.size()) {
                    close(fd);
                    fd = -1;
                }
                continue;
            }
            char buf[4096];
            const ssize_t k = read(fd, buf, sizeof buf);
            if (k > 0)
                (which[i] == 1 ? out : err).append(buf, (size_t)k);
            else if (k == 0 || (errno != EAGAIN && errno != EINTR)) {
                close(fd);
                fd = -1;
            }
        }
        // A child that floods its output is stopped at the cap: memory stays bounded.
        if (out.size() + err.size() > max_output_bytes_) {
            flooded = true;
            break;
        }
    }
    for (int &fd : fds)
        if (fd >= 0) close(fd);

    int wstatus = 0;
    if (!timed_out && !flooded) {
        // Output closed: the child is exiting. Give it until the deadline to be reaped.
        while (waitpid(pid, &wstatus, WNOHANG) == 0) {
            if (Clock::now() >= deadline) {
                timed_out = true;
                break;
            }
            usleep(1000);
        }
    }
    if (timed_out || flooded) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        waitpid(pid, &wstatus, 0);
        std::ostringstream msg;
        if (flooded)
            msg << "wrote more than " << max_output_bytes_ << " bytes of output; killed process group " << pid;
        else
            msg << "no result within " << timeout_seconds << " s; killed process group " << pid;
        const std::string t = tail_lines(err.substr(0, 4096), 5);
        if (!t.empty()) msg << "; stderr: " << t;
        return outcome(flooded ? Status::InvalidResult : Status::Timeout, msg.str());
    }
    // Any other process the candidate left in its group goes too.
    kill(-pid, SIGKILL);

    if (WIFSIGNALED(wstatus)) {
        const int sig = WTERMSIG(wstatus);
        std::string msg = "killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
        const std::string t = tail_lines(err, 5);
        if (!t.empty()) msg += "; stderr: " + t;
        return outcome(Status::Crash, msg);
    }
    const int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
    // A result is only a result when the child says it finished: exit status 0.
    if (code != 0) {
        const bool parsable = nlohmann::json::accept(out);
        std::string msg = "exited with status " + std::to_string(code) +
                          (parsable ? " after printing a result; not trusted" : " without a result");
        const std::string t = tail_lines(err, 5);
        if (!t.empty()) msg += "; stderr: " + t;
        return outcome(parsable ? Status::InvalidResult : Status::Crash, msg);
    }
    *answer = std::move(out);
    return std::nullopt;
}

std::vector<Measurement> IsolatedMeasurer::measure(const MeasureTask &task, const std::vector<sched::ScheduleSpec> &candidates,
                                                   const ProgressFn &progress) {
    std::vector<Measurement> results;
    ProgressTracker tracker(progress, (int)candidates.size());
    for (const auto &c : candidates) {
        results.push_back(measure_one(task, c));
        tracker.done(results.back());
    }
    return results;
}

std::vector<Measurement> InProcessMeasurer::measure(const MeasureTask &task, const std::vector<sched::ScheduleSpec> &candidates,
                                                    const ProgressFn &progress) {
    std::vector<Measurement> results;
    ProgressTracker tracker(progress, (int)candidates.size());
    for (const auto &c : candidates) {
        results.push_back(validate_measurement(run_measurement(task, c)));
        tracker.done(results.back());
    }
    return results;
}

std::vector<Measurement> InProcessMeasurer::measure_interleaved(const MeasureTask &task,
                                                                const std::vector<sched::ScheduleSpec> &candidates) {
    std::vector<Measurement> results = run_interleaved_measurement(task, candidates);
    for (auto &m : results) m = validate_measurement(std::move(m));
    return results;
}

std::string format_progress(int done, int total, double best_ms, double eta_seconds, int width) {
    const int filled = total > 0 ? (int)((long long)done * width / total) : width;
    std::ostringstream s;
    s << '[' << std::string(filled, '#') << std::string(width - filled, '-') << "] " << done << '/' << total;
    s.setf(std::ios::fixed);
    s.precision(2);
    if (best_ms > 0)
        s << " best " << best_ms << " ms";
    else
        s << " best -";
    s << " eta " << (long long)std::llround(std::max(0.0, eta_seconds)) << " s";
    return s.str();
}

ProgressFn progress_bar(std::ostream &out, int width) {
    return [&out, width](int done, int total, double best_ms, double eta_seconds) {
        // Pad so a shorter line fully overwrites the previous one.
        out << '\r' << format_progress(done, total, best_ms, eta_seconds, width) << "   ";
        if (done == total) out << '\n';
        out.flush();
    };
}

}  // namespace tessel::autosched
