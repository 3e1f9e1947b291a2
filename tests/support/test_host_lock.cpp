// HostLock: processes taking the same lock run one at a time; a holder killed with SIGKILL
// releases it; an unopenable lock file leaves the lock not held, with a note.
#include "support/HostLock.h"
#include "tests/TempDir.h"

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

using namespace tessel;
using Clock = std::chrono::steady_clock;

namespace {

/** A child process that takes the lock on `path`, writes one byte to `ready` and holds the lock
 * for `hold_ms` (or until killed). */
pid_t hold_in_child(const std::string &path, int ready, int hold_ms) {
    const pid_t pid = fork();
    if (pid == 0) {
        HostLock lock(path);
        const char c = lock.held() ? 'y' : 'n';
        if (write(ready, &c, 1) != 1) _exit(2);
        std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
        _exit(0);
    }
    return pid;
}

}  // namespace

TEST_CASE("HostLock: a second holder waits for the first to release, or to be killed") {
    const testing::TempDir dir;
    const std::string path = dir.file("measure.lock");
    int p[2];
    REQUIRE(pipe(p) == 0);

    SUBCASE("released at exit") {
        const pid_t child = hold_in_child(path, p[1], 300);
        char c = 0;
        REQUIRE(read(p[0], &c, 1) == 1);
        CHECK(c == 'y');
        const auto t0 = Clock::now();
        HostLock lock(path);  // blocks until the child exits
        const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
        CHECK(lock.held());
        CHECK(waited > 0.2);  // the child held it 300 ms after saying so
        int status = 0;
        waitpid(child, &status, 0);
    }
    SUBCASE("released by SIGKILL") {
        const pid_t child = hold_in_child(path, p[1], 60000);
        char c = 0;
        REQUIRE(read(p[0], &c, 1) == 1);
        kill(child, SIGKILL);
        HostLock lock(path);
        CHECK(lock.held());
        int status = 0;
        waitpid(child, &status, 0);
        CHECK(WIFSIGNALED(status));
    }
    close(p[0]);
    close(p[1]);
}

TEST_CASE("HostLock: an unopenable lock file is not held, and says why") {
    const HostLock lock("/nonexistent-directory/tessel.lock");
    CHECK_FALSE(lock.held());
    CHECK(lock.note().find("/nonexistent-directory/tessel.lock") != std::string::npos);
    const HostLock none("");
    CHECK_FALSE(none.held());
}

TEST_CASE("measuring_lock_path: TESSEL_MEASURE_LOCK, off, or the temporary directory") {
    setenv("TESSEL_MEASURE_LOCK", "/x/y.lock", 1);
    CHECK(measuring_lock_path() == "/x/y.lock");
    setenv("TESSEL_MEASURE_LOCK", "off", 1);
    CHECK(measuring_lock_path().empty());
    unsetenv("TESSEL_MEASURE_LOCK");
    setenv("TMPDIR", "/var/tmp", 1);
    CHECK(measuring_lock_path() == "/var/tmp/tessel-measure.lock");
}
