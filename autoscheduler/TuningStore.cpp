/** \file
 * open_tuning_store (TuningStore.h): a path opens the SQLite file, a URL the server.
 */
#include "autoscheduler/TuningStore.h"

#include "autoscheduler/PostgresTuningDatabase.h"
#include "autoscheduler/TuningDatabase.h"

namespace tessel::autosched {

bool is_server_database(const std::string &db) { return is_postgres_url(db); }

std::unique_ptr<TuningStore> open_tuning_store(const std::string &db, TuningStore::Access access) {
    if (is_server_database(db)) return std::make_unique<PostgresTuningDatabase>(db, access);
    return std::make_unique<TuningDatabase>(db, 60000, access);
}

std::unique_ptr<TuningStore> open_tuning_store_for_reading(const std::string &db, std::string *note) {
    if (!is_server_database(db)) return TuningDatabase::open_for_reading(db, note);
    if (note) note->clear();
    // A server that cannot be reached is an error, not "no database": the user named it.
    auto store = std::make_unique<PostgresTuningDatabase>(db);
    if (!store->writable() && note)
        *note = "tuning server " + store->location() + ": this role may not write; lookups only, model picks are not stored";
    return store;
}

}  // namespace tessel::autosched
