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

    /// Keys of the notifications' `userInfo`. As in Core Data, a key is present only when its
    /// set is not empty (``event`` is always present).
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

extension ContextEvent {
    /// The event as a `userInfo` dictionary of object IDs (and the event itself).
    var idUserInfo: [AnyHashable: Any] { userInfo(objects: nil) }

    /// The event's IDs and, when given, the objects as a `userInfo` dictionary. As in Core Data,
    /// a key is present only when its set is not empty; ``ManagedObjectContext/NotificationKey/event``
    /// is always present (`boxed`: the event already converted to `Any`, to share one box
    /// between notifications).
    func userInfo(objects: ObjectSets?, boxed: Any? = nil) -> [AnyHashable: Any] {
        typealias S = UserInfoTemplate.Slot
        func bit(_ slot: S) -> Int { 1 << slot.rawValue }
        // The keys first (no temporary list), then the values by position.
        var mask = bit(.event)
        if !inserted.isEmpty { mask |= bit(.insertedObjectIDs) }
        if !updated.isEmpty { mask |= bit(.updatedObjectIDs) }
        if !deleted.isEmpty { mask |= bit(.deletedObjectIDs) }
        if !refreshed.isEmpty { mask |= bit(.refreshedObjectIDs) }
        if !invalidated.isEmpty { mask |= bit(.invalidatedObjectIDs) }
        if !permanentIDs.isEmpty { mask |= bit(.permanentObjectIDs) }
        if let objects {
            if !objects.inserted.isEmpty { mask |= bit(.insertedObjects) }
            if !objects.updated.isEmpty { mask |= bit(.updatedObjects) }
            if !objects.deleted.isEmpty { mask |= bit(.deletedObjects) }
            if !objects.refreshed.isEmpty { mask |= bit(.refreshedObjects) }
            if !objects.invalidated.isEmpty { mask |= bit(.invalidatedObjects) }
        }
        return UserInfoTemplate.withTemplate(for: mask) { t in fill(t, objects: objects, boxed: boxed) }
    }

    /// A copy of the template's dictionary with this event's values.
    private func fill(_ t: UserInfoTemplate, objects: ObjectSets?, boxed: Any?) -> [AnyHashable: Any] {
        var info = t.dictionary
        t.set(&info, .event, boxed ?? self)
        if !inserted.isEmpty { t.set(&info, .insertedObjectIDs, inserted) }
        if !updated.isEmpty { t.set(&info, .updatedObjectIDs, updated) }
        if !deleted.isEmpty { t.set(&info, .deletedObjectIDs, deleted) }
        if !refreshed.isEmpty { t.set(&info, .refreshedObjectIDs, refreshed) }
        if !invalidated.isEmpty { t.set(&info, .invalidatedObjectIDs, invalidated) }
        if !permanentIDs.isEmpty { t.set(&info, .permanentObjectIDs, permanentIDs) }
        if let objects {
            if !objects.inserted.isEmpty { t.set(&info, .insertedObjects, objects.inserted) }
            if !objects.updated.isEmpty { t.set(&info, .updatedObjects, objects.updated) }
            if !objects.deleted.isEmpty { t.set(&info, .deletedObjects, objects.deleted) }
            if !objects.refreshed.isEmpty { t.set(&info, .refreshedObjects, objects.refreshed) }
            if !objects.invalidated.isEmpty { t.set(&info, .invalidatedObjects, objects.invalidated) }
        }
        return info
    }
}

/// The objects of a notification, by kind.
struct ObjectSets {
    var inserted: Set<ManagedObject> = []
    var updated: Set<ManagedObject> = []
    var deleted: Set<ManagedObject> = []
    var refreshed: Set<ManagedObject> = []
    var invalidated: Set<ManagedObject> = []
}

/// A notification `userInfo` made once for a set of keys, and the position of each key in it.
///
/// A notification's dictionary is a copy of the template for its keys, whose values are
/// replaced by position: no key is hashed or compared. (Building `[AnyHashable: Any]` key by
/// key costs dynamic casts and generic-metadata lookups for every key, more than saving one
/// object.) Templates are made on first use for each combination of keys and kept.
struct UserInfoTemplate: @unchecked Sendable {
    // @unchecked Sendable: immutable after initialisation (the dictionary holds Strings and
    // placeholders); users copy it before changing anything.
    enum Slot: Int, CaseIterable {
        case event, insertedObjectIDs, updatedObjectIDs, deletedObjectIDs, refreshedObjectIDs, invalidatedObjectIDs, permanentObjectIDs
        case insertedObjects, updatedObjects, deletedObjects, refreshedObjects, invalidatedObjects

        var key: String {
            typealias N = ManagedObjectContext.NotificationKey
            switch self {
            case .event: return N.event
            case .insertedObjectIDs: return N.insertedObjectIDs
            case .updatedObjectIDs: return N.updatedObjectIDs
            case .deletedObjectIDs: return N.deletedObjectIDs
            case .refreshedObjectIDs: return N.refreshedObjectIDs
            case .invalidatedObjectIDs: return N.invalidatedObjectIDs
            case .permanentObjectIDs: return N.permanentObjectIDs
            case .insertedObjects: return N.insertedObjects
            case .updatedObjects: return N.updatedObjects
            case .deletedObjects: return N.deletedObjects
            case .refreshedObjects: return N.refreshedObjects
            case .invalidatedObjects: return N.invalidatedObjects
            }
        }
    }

    let dictionary: [AnyHashable: Any]
    private let positions: [Dictionary<AnyHashable, Any>.Index?]

    private init(mask: Int) {
        var d: [AnyHashable: Any] = [:]
        for slot in Slot.allCases where mask & (1 << slot.rawValue) != 0 { d[slot.key] = 0 }
        dictionary = d
        positions = Slot.allCases.map { slot in mask & (1 << slot.rawValue) != 0 ? d.index(forKey: slot.key) : nil }
    }

    /// Replaces the value of a slot in a copy of `dictionary` (a slot the template lacks is
    /// ignored).
    @inline(__always)
    func set(_ info: inout [AnyHashable: Any], _ slot: Slot, _ value: Any) {
        guard let position = positions[slot.rawValue] else { return }
        info.values[position] = value
    }

    /// The templates made so far, by mask (12 slots: at most 4,096; a process uses a handful).
    private static let made = LockedValue<[Int: UserInfoTemplate]>([:])

    /// Runs `body` with the template for the keys of `mask` (bit *n*: `Slot(rawValue: n)`),
    /// made on first use.
    /// - Complexity: O(1): one lock and one lookup (once per notification, not per object).
    static func withTemplate<R>(for mask: Int, _ body: (UserInfoTemplate) -> R) -> R {
        let template = made.withLock { table in
            if let known = table[mask] { return known }
            let template = UserInfoTemplate(mask: mask)
            table[mask] = template
            return template
        }
        return body(template)
    }
}

/// Hands events to every `events` subscriber.
typealias EventBroadcaster = Broadcaster<ContextEvent>

extension ManagedObjectContext {
    /// Posts ObjectsDidChange for changes since the last post.
    public func processPendingChanges() {
        assertOnExecutor()
        postedInserted = nil
        postedUpdated = nil
        guard !pendingChanges.isEmpty else { return }
        let p = pendingChanges
        pendingChanges = PendingChanges()
        var event = ContextEvent(kind: .objectsDidChange, contextName: name)
        let inserted = p.inserted.filter { $0.isInserted && $0._belongs(to: self) }
        event.inserted = ObjectID.set(of: inserted)
        // One pass over the updated objects (there can be thousands): clear their pending flag
        // (as `discardPendingChanges` does) and build both sets. Usually no listed object was
        // inserted or deleted since, and the list serves as it is.
        var updatedIDs = Set<ObjectID>(minimumCapacity: p.updated.count)
        var updatedSet = Set<ManagedObject>(minimumCapacity: p.updated.count)
        var someLeft = false
        p.updated.forEachBorrowed { o in
            o._state.clearPendingUpdate()
            if o.isInserted || o.isDeleted {
                someLeft = true
                return
            }
            updatedIDs.insert(o.objectID)
            updatedSet.insert(o)
        }
        let updated = someLeft ? p.updated.filter { !$0.isInserted && !$0.isDeleted } : p.updated
        event.updated = updatedIDs
        event.deleted = ObjectID.set(of: p.deleted.values)
        event.refreshed = ObjectID.set(of: p.refreshed.values)
        event.invalidated = ObjectID.set(of: p.invalidated.values)
        event.invalidatedAll = p.invalidatedAll
        // (Into an empty set, the merged IDs are taken as they are rather than rehashed.)
        if event.inserted.isEmpty { event.inserted = p.mergedInserted } else { event.inserted.formUnion(p.mergedInserted) }
        if event.updated.isEmpty { event.updated = p.mergedUpdated } else { event.updated.formUnion(p.mergedUpdated) }
        if event.deleted.isEmpty { event.deleted = p.mergedDeleted } else { event.deleted.formUnion(p.mergedDeleted) }
        let insertedSet = Set(inserted)
        if p.mergedInserted.isEmpty { postedInserted = (event.inserted, insertedSet) }
        // The save reuses these sets when its updated objects are exactly this list (it checks).
        if p.mergedUpdated.isEmpty { postedUpdated = (event.updated, updatedSet, updated) }
        var info = event.userInfo(
            objects: ObjectSets(
                inserted: insertedSet, updated: updatedSet, deleted: Set(p.deleted.values),
                refreshed: Set(p.refreshed.values), invalidated: Set(p.invalidated.values)))
        if p.invalidatedAll { info[NotificationKey.invalidatedAllObjects] = true }
        NotificationCenter.default.post(name: Self.objectsDidChangeNotification, object: self, userInfo: info)
        broadcaster.yield(event)
    }
}
