/** \file
 * SQLite helpers of the tuning database's implementation (TuningDatabase.cpp and
 * TuningDatabaseMachines.cpp), not part of its interface: Stmt, a prepared statement finalized
 * on destruction, and is_busy(), whether a result code means another connection holds a lock.
 * Legal on any open sqlite3 connection; a Stmt must not outlive its connection.
 */
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

namespace tessel::autosched::sqlite {

/** A prepared statement; finalized on destruction. */
class Stmt {
public:
    Stmt(sqlite3 *db, const char *sql) : db_(db) { rc_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
    ~Stmt() { sqlite3_finalize(s_); }
    Stmt(const Stmt &) = delete;
    Stmt &operator=(const Stmt &) = delete;
    int prepare_rc() const { return rc_; }
    void bind(int i, const std::string &v) { sqlite3_bind_text(s_, i, v.c_str(), (int)v.size(), SQLITE_TRANSIENT); }
    void bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
    void bind(int i, double v) { sqlite3_bind_double(s_, i, v); }
    int step() { return sqlite3_step(s_); }
    std::string text(int i) const {
        const unsigned char *p = sqlite3_column_text(s_, i);
        return p ? std::string(reinterpret_cast<const char *>(p), sqlite3_column_bytes(s_, i)) : std::string();
    }
    int64_t int64(int i) const { return sqlite3_column_int64(s_, i); }
    double real(int i) const { return sqlite3_column_double(s_, i); }

private:
    sqlite3 *db_;
    sqlite3_stmt *s_ = nullptr;
    int rc_;
};

inline bool is_busy(int rc) { return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED; }

}  // namespace tessel::autosched::sqlite
