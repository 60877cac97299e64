import Foundation

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
        /// The kind's name: `objectsDidChange`, `willSave` or `didSave`.
        public var description: String { k.rawValue }
    }

    /// The event's fields, shared between copies until one is changed (copy-on-write). An
    /// event is copied into every notification's `userInfo` and to every `events` subscriber:
    /// as one reference it fits an `Any` without a box and copies with one retain, where ten
    /// fields took a heap box and a retain each.
    private final class Storage: @unchecked Sendable {
        // @unchecked Sendable: a storage is changed only while uniquely referenced (see
        // `ContextEvent.makeUnique()`); once shared it is only read. For the same reason no two
        // accesses can conflict, so the fields skip run-time exclusivity checks.
        @exclusivity(unchecked) var kind: Kind
        @exclusivity(unchecked) var contextName: String? = nil
        @exclusivity(unchecked) var transactionAuthor: String? = nil
        @exclusivity(unchecked) var inserted: Set<ObjectID> = []
        @exclusivity(unchecked) var updated: Set<ObjectID> = []
        @exclusivity(unchecked) var deleted: Set<ObjectID> = []
        @exclusivity(unchecked) var refreshed: Set<ObjectID> = []
        @exclusivity(unchecked) var invalidated: Set<ObjectID> = []
        @exclusivity(unchecked) var invalidatedAll: Bool = false
        @exclusivity(unchecked) var permanentIDs: [ObjectID: ObjectID] = [:]

        init(kind: Kind, contextName: String?) {
            self.kind = kind
            self.contextName = contextName
        }

        func copy() -> Storage {
            let c = Storage(kind: kind, contextName: contextName)
            c.transactionAuthor = transactionAuthor
            c.inserted = inserted
            c.updated = updated
            c.deleted = deleted
            c.refreshed = refreshed
            c.invalidated = invalidated
            c.invalidatedAll = invalidatedAll
            c.permanentIDs = permanentIDs
            return c
        }
    }

    private var storage: Storage

    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
    }

    /// The kind of event.
    public var kind: Kind {
        get { storage.kind }
        _modify {
            makeUnique()
            yield &storage.kind
        }
    }
    /// The name of the context that posted it.
    public var contextName: String? {
        get { storage.contextName }
        _modify {
            makeUnique()
            yield &storage.contextName
        }
    }
    /// The author of the save (didSave).
    public var transactionAuthor: String? {
        get { storage.transactionAuthor }
        _modify {
            makeUnique()
            yield &storage.transactionAuthor
        }
    }
    /// Inserted objects.
    public var inserted: Set<ObjectID> {
        get { storage.inserted }
        _modify {
            makeUnique()
            yield &storage.inserted
        }
    }
    /// Updated objects.
    public var updated: Set<ObjectID> {
        get { storage.updated }
        _modify {
            makeUnique()
            yield &storage.updated
        }
    }
    /// Deleted objects.
    public var deleted: Set<ObjectID> {
        get { storage.deleted }
        _modify {
            makeUnique()
            yield &storage.deleted
        }
    }
    /// Refreshed objects.
    public var refreshed: Set<ObjectID> {
        get { storage.refreshed }
        _modify {
            makeUnique()
            yield &storage.refreshed
        }
    }
    /// Invalidated objects.
    public var invalidated: Set<ObjectID> {
        get { storage.invalidated }
        _modify {
            makeUnique()
            yield &storage.invalidated
        }
    }
    /// Every object was invalidated (reset).
    public var invalidatedAll: Bool {
        get { storage.invalidatedAll }
        _modify {
            makeUnique()
            yield &storage.invalidatedAll
        }
    }
    /// Temporary → permanent IDs (didSave).
    public var permanentIDs: [ObjectID: ObjectID] {
        get { storage.permanentIDs }
        _modify {
            makeUnique()
            yield &storage.permanentIDs
        }
    }

    /// Creates an event with no objects.
    public init(kind: Kind, contextName: String? = nil) {
        storage = Storage(kind: kind, contextName: contextName)
    }

    /// The kind, the context's name and the counts, for example `didSave(view: +2 ~1 -0 refreshed 0)`.
    public var description: String {
        "\(kind)(\(contextName ?? "unnamed"): +\(inserted.count) ~\(updated.count) -\(deleted.count) refreshed \(refreshed.count))"
    }
}
