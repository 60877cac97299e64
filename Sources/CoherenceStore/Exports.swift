// The layer below, re-exported: code that imports CoherenceStore sees its public declarations too.
@_exported import CoherenceSQLite
