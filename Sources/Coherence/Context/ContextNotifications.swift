import Foundation
import Synchronization

extension ManagedObjectContext {
    /// Posted (object: the context) when objects of the context changed: inserted, updated,
    /// deleted, refreshed or invalidated. Posted on the context's executor, when the outermost
    /// `perform` block ends, before a save, and after merges.
    public static let objectsDidChangeNotification = Notification.Name("CoherenceObjectsDidChangeNotification")
    /// Posted (object: the context) when a save starts, after validation and `willSave`.
    public static let willSaveNotification = Notification.Name("CoherenceContextWillSaveNotification")
    /// Posted (object: the context) after a save, with the saved objects and their IDs.
    public static let didSaveNotification = Notification.Name("CoherenceContextDidSaveNotification")
    /// Posted with `didSaveNotification`, carrying only object IDs (safe to hand to other threads).
    public static let didSaveObjectIDsNotification = Notification.Name("CoherenceContextDidSaveObjectIDsNotification")

    /// Keys of the notifications' `userInfo`.
    public enum NotificationKey {
        /// `Set<ManagedObject>` of inserted objects.
        public static let insertedObjects = "inserted"
        /// `Set<ManagedObject>` of updated objects.
        public static let updatedObjects = "updated"
        /// `Set<ManagedObject>` of deleted objects.
        public static let deletedObjects = "deleted"
        /// `Set<ManagedObject>` of refreshed objects.
        public static let refreshedObjects = "refreshed"
        /// `Set<ManagedObject>` of invalidated objects.
        public static let invalidatedObjects = "invalidated"
        /// `Bool`: every object was invalidated (after `reset()`).
        public static let invalidatedAllObjects = "invalidatedAll"
        /// `Set<ObjectID>` of inserted objects.
        public static let insertedObjectIDs = "inserted_objectIDs"
        /// `Set<ObjectID>` of updated objects.
        public static let updatedObjectIDs = "updated_objectIDs"
        /// `Set<ObjectID>` of deleted objects.
        public static let deletedObjectIDs = "deleted_objectIDs"
        /// `Set<ObjectID>` of refreshed objects.
        public static let refreshedObjectIDs = "refreshed_objectIDs"
        /// `Set<ObjectID>` of invalidated objects.
        public static let invalidatedObjectIDs = "invalidated_objectIDs"
        /// `[ObjectID: ObjectID]`: temporary IDs → permanent IDs given by the save.
        public static let permanentObjectIDs = "permanent_objectIDs"
        /// `ContextEvent`: the whole event as a Sendable value.
        public static let event = "event"
    }

    /// The context's events as an `AsyncSequence` (Linux Foundation has no
    /// `NotificationCenter.notifications(named:)`).
    ///
    /// ```swift
    /// for await event in context.events where event.kind == .didSave {
    ///     print(event.inserted.count, "inserted")
    /// }
    /// ```
    public var events: AsyncStream<ContextEvent> { broadcaster.stream() }
}

/// A context event as a `Sendable` value: object IDs only.
public struct ContextEvent: Sendable, CustomStringConvertible {
    /// The kind of event.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum K: String, Hashable, Sendable { case objectsDidChange, willSave, didSave }
        private let k: K
        /// Objects changed (ObjectsDidChange).
        public static let objectsDidChange = Kind(k: .objectsDidChange)
        /// A save starts (WillSave).
        public static let willSave = Kind(k: .willSave)
        /// A save finished (DidSave).
        public static let didSave = Kind(k: .didSave)
        public var description: String { k.rawValue }
    }

    /// The kind of event.
    public var kind: Kind
    /// The name of the context that posted it.
    public var contextName: String?
    /// The author of the save (didSave).
    public var transactionAuthor: String?
    /// Inserted objects.
    public var inserted: Set<ObjectID> = []
    /// Updated objects.
    public var updated: Set<ObjectID> = []
    /// Deleted objects.
    public var deleted: Set<ObjectID> = []
    /// Refreshed objects.
    public var refreshed: Set<ObjectID> = []
    /// Invalidated objects.
    public var invalidated: Set<ObjectID> = []
    /// Every object was invalidated (reset).
    public var invalidatedAll = false
    /// Temporary → permanent IDs (didSave).
    public var permanentIDs: [ObjectID: ObjectID] = [:]

    /// Creates an event with no objects.
    public init(kind: Kind, contextName: String? = nil) {
        self.kind = kind
        self.contextName = contextName
    }

    public var description: String {
        "\(kind)(\(contextName ?? "unnamed"): +\(inserted.count) ~\(updated.count) -\(deleted.count) refreshed \(refreshed.count))"
    }

    /// The event as a `userInfo` dictionary of object IDs.
    var idUserInfo: [String: Any] {
        [
            ManagedObjectContext.NotificationKey.insertedObjectIDs: inserted,
            ManagedObjectContext.NotificationKey.updatedObjectIDs: updated,
            ManagedObjectContext.NotificationKey.deletedObjectIDs: deleted,
            ManagedObjectContext.NotificationKey.refreshedObjectIDs: refreshed,
            ManagedObjectContext.NotificationKey.invalidatedObjectIDs: invalidated,
            ManagedObjectContext.NotificationKey.permanentObjectIDs: permanentIDs,
            ManagedObjectContext.NotificationKey.event: self,
        ]
    }
}

/// Hands events to every `events` subscriber.
final class EventBroadcaster: Sendable {
    private let continuations = Mutex<[UUID: AsyncStream<ContextEvent>.Continuation]>([:])

    func stream() -> AsyncStream<ContextEvent> {
        let id = UUID()
        let (stream, continuation) = AsyncStream<ContextEvent>.makeStream(bufferingPolicy: .unbounded)
        continuation.onTermination = { [weak self] _ in
            _ = self?.continuations.withLock { $0.removeValue(forKey: id) }
        }
        continuations.withLock { $0[id] = continuation }
        return stream
    }

    func yield(_ event: ContextEvent) {
        let targets = continuations.withLock { Array($0.values) }
        for c in targets { c.yield(event) }
    }

    var hasSubscribers: Bool { continuations.withLock { !$0.isEmpty } }
}

/// The contexts of a coordinator, for merging saves into contexts that ask for it.
final class ContextRegistry: Sendable {
    private let contexts = Mutex<[WeakContext]>([])

    func add(_ context: ManagedObjectContext) {
        contexts.withLock { list in
            list.removeAll { $0.context == nil }
            list.append(WeakContext(context))
        }
    }

    var all: [ManagedObjectContext] { contexts.withLock { $0.compactMap(\.context) } }
}

extension ManagedObjectContext {
    /// Posts ObjectsDidChange for changes since the last post.
    public func processPendingChanges() {
        assertOnExecutor()
        guard !pendingChanges.isEmpty else { return }
        let p = pendingChanges
        pendingChanges = PendingChanges()
        var event = ContextEvent(kind: .objectsDidChange, contextName: name)
        let inserted = p.inserted.filter { $0.isInserted && $0._context === self }
        event.inserted = Set(inserted.map(\.objectID))
        event.updated = Set(p.updated.values.filter { !$0.isInserted && !$0.isDeleted }.map(\.objectID))
        event.deleted = Set(p.deleted.values.map(\.objectID))
        event.refreshed = Set(p.refreshed.values.map(\.objectID))
        event.invalidated = Set(p.invalidated.values.map(\.objectID))
        event.invalidatedAll = p.invalidatedAll
        // (Into an empty set, the merged IDs are taken as they are rather than rehashed.)
        if event.inserted.isEmpty { event.inserted = p.mergedInserted } else { event.inserted.formUnion(p.mergedInserted) }
        if event.updated.isEmpty { event.updated = p.mergedUpdated } else { event.updated.formUnion(p.mergedUpdated) }
        if event.deleted.isEmpty { event.deleted = p.mergedDeleted } else { event.deleted.formUnion(p.mergedDeleted) }
        var info = event.idUserInfo
        info[NotificationKey.insertedObjects] = Set(inserted)
        info[NotificationKey.updatedObjects] = Set(p.updated.values.filter { !$0.isInserted && !$0.isDeleted })
        info[NotificationKey.deletedObjects] = Set(p.deleted.values)
        info[NotificationKey.refreshedObjects] = Set(p.refreshed.values)
        info[NotificationKey.invalidatedObjects] = Set(p.invalidated.values)
        if p.invalidatedAll { info[NotificationKey.invalidatedAllObjects] = true }
        NotificationCenter.default.post(name: Self.objectsDidChangeNotification, object: self, userInfo: info)
        broadcaster.yield(event)
    }
}
