import Foundation

/// Merges saves made on a dual-coordinator container's writer coordinator into its view
/// context, by Ambar's rule: a save of the view context or of a direct child of it is never
/// merged back (possible when one coordinator serves both); every other save is merged
/// asynchronously on the view context's queue, in order. With `accepts`, only the saves of the
/// contexts it accepts are merged.
final class WriterSaveMerger: CoordinatorObserver {
    weak let view: ManagedObjectContext?
    let viewCoordinator: PersistentStoreCoordinator
    let accepts: (@Sendable (AnyObject) -> Bool)?

    init(view: ManagedObjectContext, viewCoordinator: PersistentStoreCoordinator, accepts: (@Sendable (AnyObject) -> Bool)? = nil) {
        self.view = view
        self.viewCoordinator = viewCoordinator
        self.accepts = accepts
    }

    func coordinatorDidSave(_ event: ContextEvent, from source: AnyObject) {
        guard let view, source !== view else { return }
        if let accepts, !accepts(source) { return }
        if let context = source as? ManagedObjectContext, context.parent === view { return }
        if let saving = source as? ManagedObjectContext, saving.persistentStoreCoordinator !== viewCoordinator {
            // Written by the other coordinator: the view context's coordinator's cached rows of
            // these objects are stale.
            viewCoordinator.rowCache.remove(Array(event.updated.union(event.deleted)))
        }
        // The saving context's temporary IDs were never registered in the view context (it is
        // another root context): its ID map need not be checked, one entry per inserted object.
        var merged = event
        merged.permanentIDs = [:]
        view.perform { view.merge(merged) }
    }
}
