// posix_spawnp with stdout and stderr on one pipe, read with poll() so that a time limit holds
// even when the child writes nothing.
#include "support/Subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

extern char **environ;

namespace tessel {

namespace {

bool is_executable(const std::string &path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

int decode_wait_status(int st) {
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return -1;
}

}  // namespace

std::string find_program(const std::string &program) {
    if (program.empty()) return "";
    if (program.find('/') != std::string::npos) return is_executable(program) ? program : "";
    const char *path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    size_t start = 0;
    while (start <= dirs.size()) {
        size_t end = dirs.find(':', start);
        if (end == std::string::npos) end = dirs.size();
        const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
        if (const std::string candidate = dir + "/" + program; is_executable(candidate)) return candidate;
        start = end + 1;
    }
    return "";
}

std::string format_command(const std::vector<std::string> &argv) {
    std::string line;
    for (const std::string &a : argv) {
        if (!line.empty()) line += ' ';
        if (!a.empty() && a.find_first_of(" \t\n'\"\\$`*?;&|<>()") == std::string::npos) {
            line += a;
            continue;
        }
        line += '\'';
        for (char c : a) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
        line += '\'';
    }
    return line;
}

SubprocessResult run_subprocess(const std::vector<std::string> &argv, const SubprocessOptions &options) {
    if (argv.empty() || argv.front().empty()) throw std::invalid_argument("run_subprocess: no program named");
    SubprocessResult r;
    const std::string program = find_program(argv.front());
    if (program.empty()) {
        r.status = 127;
        r.output = argv.front() + ": program not found (or not executable)\n";
        return r;
    }
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("run_subprocess: pipe: ") + std::strerror(errno));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    std::vector<char *> args;
    for (const std::string &a : argv) args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = -1;
    const int spawned = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (spawned != 0) {
        ::close(fds[0]);
        r.status = 127;
        r.output = format_command(argv) + ": cannot start: " + std::strerror(spawned) + "\n";
        return r;
    }
    using Clock = std::chrono::steady_clock;
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.timeout_seconds));
    char buf[4096];
    for (;;) {
        int wait_ms = -1;
        if (options.timeout_seconds > 0) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
            if (left <= 0) {
                ::kill(pid, SIGKILL);
                r.timed_out = true;
                break;
            }
            wait_ms = static_cast<int>(std::min<long long>(left, 1000));
        }
        pollfd p{fds[0], POLLIN, 0};
        const int ready = ::poll(&p, 1, wait_ms);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) continue;
        const ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;  // every writer closed: the child (and any of its children) is done writing
        r.output.append(buf, static_cast<size_t>(n));
    }
    ::close(fds[0]);
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    r.status = decode_wait_status(st);
    return r;
}

}  // namespace tessel
