// A program started from an argument vector (no shell) that runs beside the test: the job
// queue's workers. Its stdout and stderr go to a log file; kill() sends SIGKILL (the fault the
// tests inject), wait() collects the exit status (128 + signal when killed). The destructor
// kills and reaps a process still running, so a failed test leaves none behind.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <chrono>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tessel::testing {

class BackgroundProcess {
public:
    BackgroundProcess(const std::vector<std::string> &argv, const std::string &log_path) : log_(log_path) {
        std::vector<char *> args;
        for (const std::string &a : argv) args.push_back(const_cast<char *>(a.c_str()));
        args.push_back(nullptr);
        pid_ = fork();
        if (pid_ < 0) throw std::runtime_error("fork failed");
        if (pid_ == 0) {
            int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0) {
                dup2(fd, 1);
                dup2(fd, 2);
                close(fd);
            }
            execv(args[0], args.data());
            _exit(127);
        }
    }
    ~BackgroundProcess() {
        if (running()) kill();
        wait();
    }
    BackgroundProcess(const BackgroundProcess &) = delete;
    BackgroundProcess &operator=(const BackgroundProcess &) = delete;

    pid_t pid() const { return pid_; }
    bool running() {
        if (status_ >= 0) return false;
        int st = 0;
        if (waitpid(pid_, &st, WNOHANG) == pid_) {
            status_ = decode(st);
            return false;
        }
        return true;
    }
    void kill() { ::kill(pid_, SIGKILL); }
    /** Waits up to `seconds` (then kills); the exit status, 128 + signal when killed. */
    int wait(double seconds = 600) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
        while (running() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (status_ < 0) {
            kill();
            int st = 0;
            waitpid(pid_, &st, 0);
            status_ = decode(st);
        }
        return status_;
    }
    std::string log() const {
        std::ifstream f(log_);
        std::string s;
        std::getline(f, s, '\0');
        return s;
    }

private:
    static int decode(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st); }
    pid_t pid_ = -1;
    int status_ = -1;
    std::string log_;
};

}  // namespace tessel::testing
