/** \file
 * PostgresKernelStore (PostgresKernelStore.h). Objects travel as hex text (encode/decode on the
 * server), so every statement stays a text-parameter one.
 *
 * Server layout (component 'kernels', version 1):
 *   kernels(hash TEXT PRIMARY KEY, record TEXT, object BYTEA, object_bytes BIGINT,
 *           object_sha256 TEXT, stored_at TIMESTAMPTZ)
 */
#include "autoscheduler/PostgresKernelStore.h"

#include "autoscheduler/PostgresTuningDatabase.h"

namespace tessel::autosched {

namespace {

const std::vector<std::string> kKernelMigrations = {
    R"sql(
CREATE TABLE kernels (
  hash TEXT PRIMARY KEY,
  record TEXT NOT NULL,
  object BYTEA NOT NULL,
  object_bytes BIGINT NOT NULL,
  object_sha256 TEXT NOT NULL,
  stored_at TIMESTAMPTZ NOT NULL DEFAULT now());
)sql",
};

std::string to_hex(const std::string &bytes) {
    static const char *digits = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char c : bytes) out += {digits[c >> 4], digits[c & 15]};
    return out;
}

std::string from_hex(const std::string &hex) {
    auto value = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
    std::string out(hex.size() / 2, '\0');
    for (size_t i = 0; i < out.size(); i++) out[i] = (char)(value(hex[2 * i]) << 4 | value(hex[2 * i + 1]));
    return out;
}

}  // namespace

PostgresKernelStore::PostgresKernelStore(const std::string &url) : conn_(url) {
    apply_migrations(conn_, "kernels", kKernelMigrations, true);
}

std::optional<SharedKernelStore::Entry> PostgresKernelStore::fetch(const std::string &hash) {
    std::lock_guard<std::mutex> l(lock_);
    PgResult r = conn_.exec("SELECT record, encode(object, 'hex') FROM kernels WHERE hash = $1", {hash}, "cannot fetch a kernel");
    if (r.rows() != 1) return std::nullopt;
    return Entry{r.text(0, 0), from_hex(r.text(0, 1))};
}

void PostgresKernelStore::store(const std::string &hash, const std::string &record, const std::string &object) {
    std::lock_guard<std::mutex> l(lock_);
    conn_.exec(
        "INSERT INTO kernels (hash, record, object, object_bytes, object_sha256) VALUES ($1, $2, decode($3, 'hex'), $4, $5) "
        "ON CONFLICT (hash) DO UPDATE SET record = EXCLUDED.record, object = EXCLUDED.object, "
        "object_bytes = EXCLUDED.object_bytes, object_sha256 = EXCLUDED.object_sha256, stored_at = now()",
        {hash, record, to_hex(object), std::to_string(object.size()), sha256_hex(object)}, "cannot store a kernel");
}

std::shared_ptr<SharedKernelStore> shared_kernel_store_for(const std::string &db) {
    if (!is_postgres_url(db)) return nullptr;
    return std::make_shared<PostgresKernelStore>(db);
}

}  // namespace tessel::autosched
