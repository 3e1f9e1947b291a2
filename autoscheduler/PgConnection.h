/** \file
 * One libpq connection to a PostgreSQL server, as the tuning database's server backend
 * (PostgresTuningDatabase.h) and the job queue (JobQueue.h) use it: parameterized statements
 * only (PQexecParams: values never become SQL text), one transaction helper, and errors that say
 * which server and what failed.
 *
 * Errors: every failure throws PgError whose what() is "tuning server
 * postgresql://user@host:port/db: <what we were doing>: <libpq's message> (<hint>)". The URL is
 * shown without its password. The hint names the usual cause by SQLSTATE or message: refused
 * authentication, a role that may not write, a read-only server, a full disk, a server that is
 * down. connection_lost() says whether a failure was the connection (the server stopped or
 * restarted): callers that must survive a restart (workers) reconnect() and retry.
 *
 * Legal from one thread at a time; use one object per thread.
 *
 * Example:
 *   PgConnection c("postgresql://tessel@127.0.0.1:5432/tuning");
 *   PgResult r = c.exec("SELECT version FROM tessel_schema WHERE name = $1", {"tuning"});
 *   if (r.rows() == 1) int v = std::stoi(r.text(0, 0));
 *   c.transaction([&] { c.exec("INSERT INTO ...", {...}); });
 */
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "autoscheduler/TuningRecord.h"

struct pg_conn;
struct pg_result;

namespace tessel::autosched {

/** A server-side failure; a TuningDatabaseError, so commands report it like a SQLite one. */
class PgError : public TuningDatabaseError {
public:
    PgError(const std::string &message, std::string sqlstate, bool connection_lost)
        : TuningDatabaseError(message), sqlstate_(std::move(sqlstate)), connection_lost_(connection_lost) {}
    /** The five-character SQLSTATE ("42501"), "" when the server sent none. */
    const std::string &sqlstate() const { return sqlstate_; }
    /** True when the connection itself failed or the server cannot be reached (down,
     * restarting, starting up): waiting may help. False for refused authentication, a missing
     * database or role, a bad URL and every statement error. */
    bool connection_lost() const { return connection_lost_; }

private:
    std::string sqlstate_;
    bool connection_lost_;
};

/** The rows of one statement, as text (NULL reads as ""). */
class PgResult {
public:
    explicit PgResult(pg_result *r);
    ~PgResult();
    PgResult(PgResult &&o) noexcept : r_(o.r_) { o.r_ = nullptr; }
    PgResult(const PgResult &) = delete;
    PgResult &operator=(const PgResult &) = delete;
    PgResult &operator=(PgResult &&) = delete;

    int rows() const;
    std::string text(int row, int column) const;
    bool is_null(int row, int column) const;
    /** Rows a data-changing statement affected (INSERT, UPDATE, DELETE). */
    int64_t affected() const;

private:
    friend class PgConnection;
    pg_result *r_;
};

/** A statement parameter: text, or SQL NULL. */
using PgParam = std::optional<std::string>;

class PgConnection {
public:
    /** Connects to `url` (postgresql://user[:password]@host[:port]/dbname[?options]). Throws
     * PgError naming the server when the URL is malformed or the connection is refused. */
    explicit PgConnection(const std::string &url);
    ~PgConnection();
    PgConnection(const PgConnection &) = delete;
    PgConnection &operator=(const PgConnection &) = delete;

    /** "postgresql://user@host:port/db": the server, without the password, for messages. */
    const std::string &server() const { return server_; }
    /** The role this connection logged in as. */
    const std::string &user() const { return user_; }

    /** Runs one statement with $1..$n bound to `params`. Throws PgError, prefixed by `what`
     * (default: the statement's first words). */
    PgResult exec(const std::string &sql, const std::vector<PgParam> &params = {}, const std::string &what = "");
    /** Runs several statements of fixed text (schema migrations; no parameters, so nothing a
     * user supplies may reach it). Throws PgError prefixed by `what`. */
    void exec_script(const std::string &sql, const std::string &what);
    /** BEGIN, `body`, COMMIT; ROLLBACK and rethrow when `body` or the commit throws. */
    void transaction(const std::function<void()> &body);

    /** Drops the connection and connects again (after the server restarted). Throws PgError when
     * the server is still unreachable. */
    void reconnect();

    /** The message a failure of `what` carries: the server, `what`, `detail`, a hint by SQLSTATE. */
    std::string message(const std::string &what, const std::string &detail, const std::string &sqlstate) const;

private:
    void connect();

    std::string url_;
    std::string server_;
    std::string user_;
    pg_conn *conn_ = nullptr;
};

/** True for a --db value naming a PostgreSQL server (postgresql:// or postgres://). */
bool is_postgres_url(const std::string &db);

/** `url` without its password (a password in the userinfo or a password= option becomes ***). */
std::string redact_postgres_url(const std::string &url);

}  // namespace tessel::autosched
