import Foundation

/// Drops a dual-coordinator strategy's writer coordinator's cached rows of the objects that a
/// save through the container's coordinator changed or deleted (the view context's saves, and
/// editor contexts' through it). Both coordinators read the same files; without it, an importer
/// context made after a view-context save would be served the rows as they were before it.
final class WriterRowCacheInvalidator: CoordinatorObserver {
    weak let writer: PersistentStoreCoordinator?

    init(writer: PersistentStoreCoordinator) { self.writer = writer }

    func coordinatorDidSave(_ event: ContextEvent, from source: AnyObject) {
        guard let writer, !event.updated.isEmpty || !event.deleted.isEmpty else { return }
        writer.rowCache.remove(Array(event.updated.union(event.deleted)))
    }
}
