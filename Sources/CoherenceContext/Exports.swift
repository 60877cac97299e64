// The layer below, re-exported: code that imports CoherenceContext sees its public declarations too.
@_exported import CoherenceStore
