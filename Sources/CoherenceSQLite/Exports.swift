// The layer below, re-exported: code that imports CoherenceSQLite sees its public declarations too.
@_exported import CoherenceBase
