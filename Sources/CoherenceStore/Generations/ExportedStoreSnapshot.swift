import Foundation

/// A store snapshot that other connections, of this coordinator or of another one (in another
/// process or on another machine), can open too while it is held: a PostgreSQL store's exported
/// snapshot. Its identifier travels in the generation's ``QueryGenerationToken``.
package protocol ExportedStoreSnapshot: StoreSnapshot {
    /// The snapshot's name on the server, valid while this snapshot is held.
    var exportedIdentifier: String { get }
}

/// A store engine that opens a snapshot another store object exported
/// (``ExportedStoreSnapshot``).
package protocol SnapshotImporting: StoreEngine {
    /// A snapshot of the store at the exported snapshot `identifier`.
    /// - Throws: `.invalidQueryGenerationToken` when the snapshot is no longer held.
    func openSnapshot(importing identifier: String) throws(CoherenceError) -> any StoreSnapshot
}

extension PersistentStoreCoordinator {
    /// A new generation of this coordinator's stores at the exported snapshots another
    /// coordinator's `token` carries, held once.
    /// - Throws: `.invalidQueryGenerationToken` when the token carries no snapshot of one of the
    ///   stores, or the snapshot is no longer held.
    package func importQueryGeneration(_ token: QueryGenerationToken) throws(CoherenceError) -> QueryGeneration {
        var snapshots: [UUID: any StoreSnapshot] = [:]
        do throws(CoherenceError) {
            for store in persistentStores {
                guard let identifier = token.exportedSnapshots[store.identifier], let engine = store.engine as? any SnapshotImporting
                else {
                    throw CoherenceError(
                        .invalidQueryGenerationToken,
                        "\(token) belongs to another coordinator and carries no exported snapshot of this store.",
                        store: Self.location(of: store))
                }
                snapshots[store.identifier] = try engine.openSnapshot(importing: identifier)
            }
        } catch {
            for s in snapshots.values { s.close() }
            throw error
        }
        return queryGenerations.add(snapshots)
    }
}
