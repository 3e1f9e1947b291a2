/** \file
 * HostLock (HostLock.h): flock(LOCK_EX) on a file descriptor kept open for the lock's lifetime.
 */
#include "support/HostLock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace tessel {

HostLock::HostLock(const std::string &path) {
    if (path.empty()) return;
    // Read-only is enough for flock, and lets another user's process share a file root created.
    fd_ = ::open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0) {
        note_ = "cannot open the lock file " + path + ": " + std::strerror(errno);
        return;
    }
    (void)::fchmod(fd_, 0666);  // the umask may have narrowed it; fails harmlessly when not the owner
    int rc;
    do rc = ::flock(fd_, LOCK_EX);
    while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        note_ = "cannot lock " + path + ": " + std::strerror(errno);
        ::close(fd_);
        fd_ = -1;
    }
}

HostLock::~HostLock() {
    if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the lock
}

std::string measuring_lock_path() {
    if (const char *env = std::getenv("TESSEL_MEASURE_LOCK")) return std::string(env) == "off" ? "" : env;
    const char *tmp = std::getenv("TMPDIR");
    return std::string(tmp && *tmp ? tmp : "/tmp") + "/tessel-measure.lock";
}

}  // namespace tessel
