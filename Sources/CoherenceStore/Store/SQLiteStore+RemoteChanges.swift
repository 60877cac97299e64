import Foundation

extension SQLiteStore {
    /// SQLite's `PRAGMA data_version` on the writer connection: it changes when any other
    /// connection — another coordinator's, in this process or another — commits, and never for
    /// this store's own saves, which all go through that connection. Called under the
    /// coordinator's save lock (the writer connection's rule).
    package func externalCommitVersion() throws(CoherenceError) -> Int64? {
        let c = try writerConnectionForSave()
        do {
            let st = try c.cachedStatement("PRAGMA data_version")
            defer { st.reset() }
            guard try st.step() else {
                throw CoherenceError(.storeReadFailed, "PRAGMA data_version returned no row.", store: url.path, sql: "PRAGMA data_version")
            }
            return st.int64(0)
        } catch {
            throw storeError(.storeReadFailed, error, "Reading the store's data version failed")
        }
    }
}
