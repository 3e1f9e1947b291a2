/** \file
 * HostLock: an exclusive advisory lock (flock) on a file, held for the object's lifetime, so
 * that processes on one host that take the same lock run one at a time. The kernel drops the
 * lock when its holder exits, even by SIGKILL, so a killed holder never blocks the others.
 *
 * What it is for: timing measurements on one host must not overlap (two measuring children on
 * two cores each disturb the other's medians several-fold), whoever starts them: `tessel tune`,
 * any number of `tessel worker`s, tests. measuring_lock_path() is the lock they share.
 *
 * A lock file that cannot be opened (a read-only /tmp) leaves the object not held(): the caller
 * goes on unserialized rather than failing; why is in note().
 */
#pragma once

#include <string>

namespace tessel {

class HostLock {
public:
    /** Blocks until the lock on `path` (created if missing, mode 0666) is this process's. */
    explicit HostLock(const std::string &path);
    ~HostLock();
    HostLock(const HostLock &) = delete;
    HostLock &operator=(const HostLock &) = delete;

    bool held() const { return fd_ >= 0; }
    const std::string &note() const { return note_; }

private:
    int fd_ = -1;
    std::string note_;
};

/** The lock measuring children take: $TESSEL_MEASURE_LOCK if set ("off": none, ""), else
 * "tessel-measure.lock" in $TMPDIR or /tmp. */
std::string measuring_lock_path();

}  // namespace tessel
