import Foundation

/// A store engine that hears the commits of other coordinators itself (a server store, through
/// its server), instead of the commit-counter file next to a SQLite store.
///
/// The coordinator starts it when the store is attached with
/// ``StoreOptions/remoteChangeNotificationPost`` and posts each change it reports as it posts a
/// SQLite store's (``PersistentStoreCoordinator/remoteChanges``,
/// `Notification.Name.persistentStoreRemoteChange`). The engine leaves out its own commits, and
/// stops when it is closed.
package protocol RemoteChangeSource: AnyObject {
    /// Starts listening; `onChange` is called (on a thread of the engine's) once per batch of
    /// other writers' commits, with the history token the last one carried (nil when it carried
    /// none). Commits the engine may have missed (its connection to the server was lost) are
    /// reported as one change without a token.
    /// - Throws: `.storeOpenFailed` when listening cannot start.
    func startRemoteChanges(_ onChange: @escaping @Sendable (PersistentHistoryToken?) -> Void) throws(CoherenceError)
}
