// The layers below, re-exported: `import Coherence` gives their public declarations too.
@_exported import CoherenceBase
@_exported import CoherenceContext
@_exported import CoherenceSQLite
@_exported import CoherenceStore
