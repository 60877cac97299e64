// The layer below, re-exported: code that imports CoherencePostgreSQL sees the store's public
// declarations too.
@_exported import CoherenceStore
