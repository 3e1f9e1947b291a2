/** \file
 * The compiled-kernel cache's shared tier on the tuning server (codegen/KernelCache.h,
 * SharedKernelStore): kernel objects and their records stored by key hash in the server's
 * `kernels` table (component 'kernels' of tessel_schema), so a `tessel run` on another host of the
 * same class, with the same Tessel build, loads instead of compiling.
 *
 * What decides a kernel's bytes is in its record, written by KernelCache: the graph, group and
 * schedule (the variant's description), the function name, the full target string with its
 * features, Halide's version and the GNU build ID of the Tessel executable (which changes with
 * Tessel's code and compiler flags). This store checks nothing itself: KernelCache compares the
 * fetched record with the key it needs, and the object's size and SHA-256 with the record, and
 * never loads an entry that differs (it compiles the kernel and replaces the entry).
 *
 * Legal from any thread (one connection behind a mutex).
 */
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "autoscheduler/PgConnection.h"
#include "codegen/KernelCache.h"

namespace tessel::autosched {

class PostgresKernelStore : public SharedKernelStore {
public:
    /** Connects to `url` and creates or migrates the 'kernels' component. Throws PgError. */
    explicit PostgresKernelStore(const std::string &url);
    std::optional<Entry> fetch(const std::string &hash) override;
    void store(const std::string &hash, const std::string &record, const std::string &object) override;
    std::string location() const override { return conn_.server(); }

private:
    std::mutex lock_;
    PgConnection conn_;
};

/** The shared tier for a --db value: the server's store for a PostgreSQL URL, nullptr for a file. */
std::shared_ptr<SharedKernelStore> shared_kernel_store_for(const std::string &db);

}  // namespace tessel::autosched
