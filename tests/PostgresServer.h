// A real PostgreSQL server for a test binary: initdb in a temporary directory, started with
// pg_ctl on a free loopback port (and a private socket directory), stopped and removed at the
// end. One per test binary (a doctest case asks PostgresServer::shared()); each case takes its
// own database (fresh_database()), so cases do not see each other's rows.
//
// Binaries: $TESSEL_PG_BINDIR, else the newest /usr/lib/postgresql/<n>/bin (Debian's
// `postgresql` package, which cmake/setup.sh installs). When none is found, available() is false
// and skip_reason() is the one line the test prints. PostgreSQL refuses to run as root: as root
// the server runs as the `postgres` system user (runuser), its directory chowned to it.
//
// Roles: `tessel_admin` (superuser, trusted on loopback), `reader` (SELECT only, made by
// add_reader()) and `secured` (a password role: the server demands scram-sha-256 from it, for
// the refused-authentication test).
#pragma once

#include <doctest/doctest.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/Subprocess.h"

namespace tessel::testing {

class PostgresServer {
public:
    /** The binary-wide server, started on first use. */
    static PostgresServer &shared() {
        static PostgresServer server;
        return server;
    }

    bool available() const { return !bindir_.empty() && started_; }
    const std::string &skip_reason() const { return skip_; }
    int port() const { return port_; }

    /** postgresql://user@127.0.0.1:port/db */
    std::string url(const std::string &db, const std::string &user = "tessel_admin") const {
        return "postgresql://" + user + "@127.0.0.1:" + std::to_string(port_) + "/" + db;
    }

    /** A new, empty database named `name` (dropped first if it exists). Returns its URL. */
    std::string fresh_database(const std::string &name) {
        admin("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
        admin("CREATE DATABASE " + name);
        return url(name);
    }

    /** Runs `sql` as tessel_admin on database `db` (default: postgres). Throws on failure. */
    void admin(const std::string &sql, const std::string &db = "postgres") const {
        PGconn *c = PQconnectdb(url(db).c_str());
        PQsetNoticeProcessor(
            c, [](void *, const char *) {}, nullptr);
        std::string error;
        if (PQstatus(c) != CONNECTION_OK) {
            error = PQerrorMessage(c);
        } else {
            PGresult *r = PQexec(c, sql.c_str());
            if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) error = PQresultErrorMessage(r);
            PQclear(r);
        }
        PQfinish(c);
        if (!error.empty()) throw std::runtime_error("test server: " + sql + ": " + error);
    }

    /** The first column of the first row of `sql` on `db`, as text. */
    std::string query_one(const std::string &sql, const std::string &db) const {
        PGconn *c = PQconnectdb(url(db).c_str());
        PGresult *r = PQexec(c, sql.c_str());
        std::string out = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "<error>";
        if (out == "<error>") out += PQresultErrorMessage(r);
        PQclear(r);
        PQfinish(c);
        return out;
    }

    /** Role `reader` may connect to `db` and SELECT its tables, nothing more. */
    void add_reader(const std::string &db) {
        admin(
            "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'reader') THEN CREATE ROLE reader LOGIN; END IF; END $$");
        admin("GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader", db);
    }

    /** A tablespace `name` on a tmpfs of `megabytes` mounted for it (a server disk that fills up);
     * "" on success, else why it cannot be made (needs root to mount: the caller skips). The
     * mount goes with the server. */
    std::string add_small_tablespace(const std::string &name, int megabytes) {
        if (geteuid() != 0) return "not root: cannot mount a small file system for the server";
        const std::string dir = dir_ + "/" + name;
        std::filesystem::create_directories(dir);
        const SubprocessResult m =
            run_subprocess({"mount", "-t", "tmpfs", "-o", "size=" + std::to_string(megabytes) + "m,mode=0700", "tmpfs", dir});
        if (!m.ok()) return "cannot mount a tmpfs (" + m.output + ")";
        mounts_.push_back(dir);
        run({"chown", "postgres:postgres", dir});
        admin("CREATE TABLESPACE " + name + " LOCATION '" + dir + "'");
        return "";
    }

    /** Stops the server (fast); start() brings it back on the same port. */
    void stop() { pg_ctl({"stop", "-m", "fast"}); }
    void start() { pg_ctl({"start"}); }

    /** Stops the server (fast) and starts it again on the same port: connections are cut. */
    void restart() { pg_ctl({"restart", "-m", "fast"}); }

    ~PostgresServer() {
        if (started_) pg_ctl({"stop", "-m", "immediate"});
        for (const std::string &m : mounts_) run_subprocess({"umount", m});
        std::error_code ec;
        if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
    }

private:
    PostgresServer() {
        bindir_ = find_bindir();
        if (bindir_.empty()) {
            skip_ = "PostgreSQL server binaries not found (install Debian's postgresql, or set TESSEL_PG_BINDIR): skipped";
            return;
        }
        as_postgres_ = geteuid() == 0;
        if (as_postgres_ && !getpwnam("postgres")) {
            bindir_.clear();
            skip_ = "running as root and there is no `postgres` user to run the server as: skipped";
            return;
        }
        char tmpl[] = "/tmp/tessel-pg-XXXXXX";
        dir_ = mkdtemp(tmpl);
        port_ = free_port();
        std::filesystem::create_directories(dir_ + "/sock");
        if (as_postgres_) run({"chown", "-R", "postgres:postgres", dir_});
        run(as_server_user({bindir_ + "/initdb", "-D", dir_ + "/data", "-U", "tessel_admin", "--auth=trust", "-E", "UTF8",
                            "--no-sync", "--no-instructions"}));
        std::ofstream conf(dir_ + "/data/postgresql.conf", std::ios::app);
        conf << "listen_addresses = '127.0.0.1'\nport = " << port_ << "\nunix_socket_directories = '" << dir_
             << "/sock'\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 60\n";
        conf.close();
        std::ofstream hba(dir_ + "/data/pg_hba.conf", std::ios::trunc);
        hba << "local all all trust\nhost all secured 127.0.0.1/32 scram-sha-256\nhost all all 127.0.0.1/32 trust\n";
        hba.close();
        if (as_postgres_) run({"chown", "-R", "postgres:postgres", dir_});
        pg_ctl({"start"});
        started_ = true;
        admin("CREATE ROLE secured LOGIN PASSWORD 'right-password'");
    }

    static std::string find_bindir() {
        if (const char *env = getenv("TESSEL_PG_BINDIR"); env && std::filesystem::exists(std::string(env) + "/pg_ctl"))
            return env;
        std::vector<std::string> found;
        std::error_code ec;
        for (const auto &e : std::filesystem::directory_iterator("/usr/lib/postgresql", ec))
            if (std::filesystem::exists(e.path() / "bin" / "pg_ctl") && std::filesystem::exists(e.path() / "bin" / "initdb"))
                found.push_back(e.path().filename().string());
        if (found.empty()) return "";
        std::sort(found.begin(), found.end(),
                  [](const std::string &a, const std::string &b) { return std::stoi(a) < std::stoi(b); });
        return "/usr/lib/postgresql/" + found.back() + "/bin";
    }

    static int free_port() {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = 0;
        bind(s, (sockaddr *)&a, sizeof a);
        socklen_t len = sizeof a;
        getsockname(s, (sockaddr *)&a, &len);
        close(s);
        return ntohs(a.sin_port);
    }

    std::vector<std::string> as_server_user(std::vector<std::string> argv) const {
        if (as_postgres_) argv.insert(argv.begin(), {"runuser", "-u", "postgres", "--"});
        return argv;
    }

    void pg_ctl(const std::vector<std::string> &args) const {
        std::vector<std::string> argv = {bindir_ + "/pg_ctl", "-D", dir_ + "/data", "-l", dir_ + "/server.log", "-w", "-t", "60"};
        argv.insert(argv.end(), args.begin(), args.end());
        run(as_server_user(argv));
    }

    void run(const std::vector<std::string> &argv) const {
        SubprocessOptions o;
        o.timeout_seconds = 120;
        const SubprocessResult r = run_subprocess(argv, o);
        if (!r.ok()) {
            std::string log;
            std::ifstream f(dir_ + "/server.log");
            std::getline(f, log, '\0');
            throw std::runtime_error("test server: " + format_command(argv) + " failed: " + r.output + "\n" + log);
        }
    }

    std::string bindir_, dir_, skip_;
    std::vector<std::string> mounts_;
    int port_ = 0;
    bool as_postgres_ = false;
    bool started_ = false;
};

}  // namespace tessel::testing

/** The first statement of a PostgreSQL test case: the shared server, or a one-line skip. */
#define TESSEL_REQUIRE_POSTGRES(server)                       \
    auto &server = tessel::testing::PostgresServer::shared(); \
    if (!server.available()) {                                \
        MESSAGE(server.skip_reason());                        \
        return;                                               \
    }
