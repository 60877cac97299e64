// The layer below, re-exported: code that imports Coherence sees its public declarations too.
@_exported import CoherenceContext
