/** \file
 * PgConnection (PgConnection.h): libpq, text parameters and results, errors naming the server.
 */
#include "autoscheduler/PgConnection.h"

#include <libpq-fe.h>

namespace tessel::autosched {

namespace {

/** The parts of a connection string libpq would use, by keyword ("host", "port", ...). */
std::string conninfo_value(PQconninfoOption *opts, const char *keyword) {
    for (PQconninfoOption *o = opts; o && o->keyword; ++o)
        if (std::string(o->keyword) == keyword && o->val) return o->val;
    return "";
}

/** Why a statement or a connection failed, in words a user can act on. */
std::string hint_for(const std::string &sqlstate, const std::string &detail, const std::string &user) {
    auto has = [&](const char *s) { return detail.find(s) != std::string::npos; };
    if (has("password authentication failed") || has("no pg_hba.conf entry") || has("authentication failed") ||
        has("no password supplied"))
        return "authentication refused for role '" + user +
               "': check the user name and password (or ~/.pgpass) and the server's pg_hba.conf";
    if (has("Connection refused") || has("could not connect") || has("timeout expired"))
        return "is the server running and listening on that host and port?";
    if (has("database \"") && has("does not exist")) return "create the database first (createdb), or name another in the URL";
    if (has("role \"") && has("does not exist")) return "the server has no such role";
    if (sqlstate == "42501")
        return "role '" + user + "' may not do this (a read-only role?); commands that only look schedules up work with it";
    if (sqlstate == "25006") return "the server is read-only (a standby, or default_transaction_read_only is on)";
    if (sqlstate == "53100") return "the server's disk is full; free space on the server, then retry";
    if (sqlstate.rfind("53", 0) == 0) return "the server is out of a resource (memory, connections)";
    if (sqlstate.rfind("08", 0) == 0 || sqlstate.rfind("57P", 0) == 0)
        return "the connection to the server was lost (restarted or stopped?)";
    return "";
}

}  // namespace

bool is_postgres_url(const std::string &db) { return db.rfind("postgresql://", 0) == 0 || db.rfind("postgres://", 0) == 0; }

std::string redact_postgres_url(const std::string &url) {
    std::string out = url;
    const size_t scheme = out.find("://");
    if (scheme != std::string::npos) {
        const size_t start = scheme + 3;
        const size_t at = out.find('@', start), slash = out.find('/', start);
        if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
            const size_t colon = out.find(':', start);
            if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
        }
    }
    for (size_t p = out.find("password="); p != std::string::npos; p = out.find("password=", p + 1)) {
        size_t end = out.find('&', p);
        out.replace(p + 9, (end == std::string::npos ? out.size() : end) - p - 9, "***");
    }
    return out;
}

PgResult::PgResult(pg_result *r) : r_(r) {}
PgResult::~PgResult() { PQclear(r_); }
int PgResult::rows() const { return PQntuples(r_); }
std::string PgResult::text(int row, int column) const {
    return PQgetisnull(r_, row, column) ? std::string() : std::string(PQgetvalue(r_, row, column), PQgetlength(r_, row, column));
}
bool PgResult::is_null(int row, int column) const { return PQgetisnull(r_, row, column) != 0; }
int64_t PgResult::affected() const {
    const char *n = PQcmdTuples(r_);
    return n && *n ? std::stoll(n) : 0;
}

PgConnection::PgConnection(const std::string &url) : url_(url) {
    // The server's name for messages comes from the URL itself, so a connection that fails is
    // named as clearly as one that works.
    char *err = nullptr;
    PQconninfoOption *opts = PQconninfoParse(url.c_str(), &err);
    if (!opts) {
        std::string detail = err ? err : "cannot parse";
        PQfreemem(err);
        while (!detail.empty() && detail.back() == '\n') detail.pop_back();
        throw PgError("tuning server '" + redact_postgres_url(url) +
                          "': not a valid PostgreSQL URL (expected postgresql://user@host:port/dbname): " + detail,
                      "", false);
    }
    std::string host = conninfo_value(opts, "host"), port = conninfo_value(opts, "port"), db = conninfo_value(opts, "dbname");
    user_ = conninfo_value(opts, "user");
    PQconninfoFree(opts);
    if (user_.empty()) user_ = getenv("PGUSER") ? getenv("PGUSER") : (getenv("USER") ? getenv("USER") : "");
    if (host.empty()) host = "localhost";
    if (port.empty()) port = "5432";
    if (db.empty()) db = user_;
    server_ = "postgresql://" + (user_.empty() ? "" : user_ + "@") + host + ":" + port + "/" + db;
    connect();
}

PgConnection::~PgConnection() { PQfinish(conn_); }

void PgConnection::connect() {
    PQfinish(conn_);
    conn_ = PQconnectdb(url_.c_str());
    if (!conn_) throw PgError(message("cannot connect", "out of memory", ""), "", true);
    if (PQstatus(conn_) != CONNECTION_OK) {
        std::string detail = PQerrorMessage(conn_);
        PQfinish(conn_);
        conn_ = nullptr;
        // Only a server that is not there (down, restarting, starting up) may come back by itself;
        // refused authentication, a missing database or role, a malformed URL never do.
        const bool unreachable =
            detail.find("Connection refused") != std::string::npos || detail.find("starting up") != std::string::npos ||
            detail.find("shutting down") != std::string::npos || detail.find("No such file or directory") != std::string::npos ||
            detail.find("server closed the connection") != std::string::npos ||
            detail.find("timeout expired") != std::string::npos;
        throw PgError(message("cannot connect", detail, ""), "", unreachable);
    }
    // Notices (CREATE TABLE IF NOT EXISTS ... skipping) are not the user's business.
    PQsetNoticeProcessor(
        conn_, [](void *, const char *) {}, nullptr);
}

void PgConnection::reconnect() { connect(); }

std::string PgConnection::message(const std::string &what, const std::string &detail, const std::string &sqlstate) const {
    std::string d = detail;
    while (!d.empty() && (d.back() == '\n' || d.back() == ' ')) d.pop_back();
    std::string flat;
    for (char c : d)
        if (c != '\t' && !(c == ' ' && !flat.empty() && flat.back() == ' ')) flat += c == '\n' ? ' ' : c;
    d = flat;
    const std::string hint = hint_for(sqlstate, d, user_);
    return "tuning server " + server_ + ": " + what + ": " + d + (hint.empty() ? "" : " (" + hint + ")");
}

PgResult PgConnection::exec(const std::string &sql, const std::vector<PgParam> &params, const std::string &what) {
    const std::string doing = what.empty() ? "cannot run " + sql.substr(0, sql.find_first_of("(\n", 0)).substr(0, 40) : what;
    if (!conn_) connect();
    std::vector<const char *> values;
    values.reserve(params.size());
    for (const PgParam &p : params) values.push_back(p ? p->c_str() : nullptr);
    PgResult r(PQexecParams(conn_, sql.c_str(), (int)params.size(), nullptr, values.data(), nullptr, nullptr, 0));
    pg_result *raw = r.r_;
    const ExecStatusType st = raw ? PQresultStatus(raw) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return r;
    const char *state = raw ? PQresultErrorField(raw, PG_DIAG_SQLSTATE) : nullptr;
    const std::string sqlstate = state ? state : "";
    const bool lost = PQstatus(conn_) != CONNECTION_OK || sqlstate.rfind("08", 0) == 0 || sqlstate.rfind("57P", 0) == 0;
    const std::string detail = raw && *PQresultErrorMessage(raw) ? PQresultErrorMessage(raw) : PQerrorMessage(conn_);
    throw PgError(message(doing, detail, sqlstate), sqlstate, lost);
}

void PgConnection::exec_script(const std::string &sql, const std::string &what) {
    if (!conn_) connect();
    PgResult r(PQexec(conn_, sql.c_str()));
    const ExecStatusType st = r.r_ ? PQresultStatus(r.r_) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return;
    const char *state = r.r_ ? PQresultErrorField(r.r_, PG_DIAG_SQLSTATE) : nullptr;
    const std::string sqlstate = state ? state : "";
    const std::string detail = r.r_ && *PQresultErrorMessage(r.r_) ? PQresultErrorMessage(r.r_) : PQerrorMessage(conn_);
    throw PgError(message(what, detail, sqlstate), sqlstate, PQstatus(conn_) != CONNECTION_OK);
}

void PgConnection::transaction(const std::function<void()> &body) {
    exec("BEGIN");
    try {
        body();
        exec("COMMIT");
    } catch (...) {
        if (conn_ && PQstatus(conn_) == CONNECTION_OK) PQclear(PQexec(conn_, "ROLLBACK"));
        throw;
    }
}

}  // namespace tessel::autosched
