#ifndef COHERENCE_SQLITE_SHIM_H
#define COHERENCE_SQLITE_SHIM_H

#include <sqlite3.h>

// Swift cannot call C variadic functions nor use function-pointer macros such as
// SQLITE_TRANSIENT; these inline wrappers give it fixed signatures.

static inline sqlite3_destructor_type coherence_sqlite3_transient(void) {
    return SQLITE_TRANSIENT;
}

static inline sqlite3_destructor_type coherence_sqlite3_static(void) {
    return SQLITE_STATIC;
}

/// sqlite3_db_config for the (int, int *) family of options
/// (SQLITE_DBCONFIG_ENABLE_FKEY, SQLITE_DBCONFIG_DEFENSIVE, SQLITE_DBCONFIG_DQS_DML, ...).
static inline int coherence_sqlite3_db_config_int(sqlite3 *db, int op, int value, int *result) {
    return sqlite3_db_config(db, op, value, result);
}

/// sqlite3_config(SQLITE_CONFIG_LOG, callback, context).
static inline int coherence_sqlite3_config_log(void (*callback)(void *, int, const char *), void *context) {
    return sqlite3_config(SQLITE_CONFIG_LOG, callback, context);
}

#endif
