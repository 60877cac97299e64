import Foundation

extension Notification.Name {
    /// Posted by a ``PersistentStoreCoordinator`` (the notification's `object`) when another
    /// coordinator — in this process or in another process on the same machine — committed to
    /// one of its SQLite stores opened with ``StoreOptions/remoteChangeNotificationPost`` (Core
    /// Data's `NSPersistentStoreRemoteChange`). A coordinator is not told of its own commits.
    ///
    /// The `userInfo` holds the keys of ``PersistentStoreCoordinator/RemoteChangeKey``. It is
    /// posted on a private queue of the coordinator; several commits close together may come as
    /// one notification. The same events come as values from
    /// ``PersistentStoreCoordinator/remoteChanges``.
    ///
    /// ```swift
    /// NotificationCenter.default.addObserver(forName: .persistentStoreRemoteChange, object: coordinator, queue: nil) { note in
    ///     let url = note.userInfo?[PersistentStoreCoordinator.RemoteChangeKey.storeURL] as? URL
    ///     print("another process changed", url?.path ?? "")
    /// }
    /// ```
    public static let persistentStoreRemoteChange = Notification.Name("CoherencePersistentStoreRemoteChangeNotification")
}

/// A commit that another coordinator made to an attached store (see
/// ``PersistentStoreCoordinator/remoteChanges``).
public struct PersistentStoreRemoteChange: Sendable, CustomStringConvertible {
    /// The store's file.
    public let storeURL: URL
    /// The store's identifier (``PersistentStore/identifier``).
    public let storeIdentifier: UUID
    /// The store's persistent-history token after the change, when the store keeps persistent
    /// history; nil otherwise.
    public let historyToken: PersistentHistoryToken?

    /// Creates a change of the store at `storeURL`.
    public init(storeURL: URL, storeIdentifier: UUID, historyToken: PersistentHistoryToken? = nil) {
        self.storeURL = storeURL
        self.storeIdentifier = storeIdentifier
        self.historyToken = historyToken
    }

    /// The change as the `userInfo` of `Notification.Name.persistentStoreRemoteChange`.
    public var userInfo: [AnyHashable: Any] {
        typealias Key = PersistentStoreCoordinator.RemoteChangeKey
        var info: [AnyHashable: Any] = [Key.storeURL: storeURL, Key.storeIdentifier: storeIdentifier]
        if let historyToken { info[Key.historyToken] = historyToken }
        return info
    }

    /// The store's file and identifier.
    public var description: String { "<PersistentStoreRemoteChange \(storeURL.path) \(storeIdentifier.uuidString)>" }
}

extension PersistentStoreCoordinator {
    /// Keys of the `userInfo` of `Notification.Name.persistentStoreRemoteChange`
    /// (Core Data's `NSPersistentStoreURLKey`, `NSStoreUUIDKey` and `NSPersistentHistoryTokenKey`).
    public enum RemoteChangeKey {
        /// `URL`: the store's file.
        public static let storeURL = "storeURL"
        /// `UUID`: the store's identifier.
        public static let storeIdentifier = "storeUUID"
        /// The store's persistent-history token after the change; present only when the store
        /// keeps persistent history.
        public static let historyToken = "historyToken"
    }
}
