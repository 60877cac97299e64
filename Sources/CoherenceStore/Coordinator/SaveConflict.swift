import Foundation

/// A conflict found while saving, reported as data for merge policies to resolve.
///
/// Two kinds, as Core Data's `NSMergeConflict` and `NSConstraintConflict`:
/// - **version**: the row changed (or was deleted) in the store since the object was loaded;
/// - **uniqueness**: the object's values for a uniqueness constraint match another row.
public struct SaveConflict: Sendable, CustomStringConvertible {
    /// The kind of conflict.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum K: String, Hashable, Sendable { case version, uniqueness }
        private let k: K
        /// Optimistic locking: the stored row's version moved.
        public static let version = Kind(k: .version)
        /// A uniqueness constraint is violated.
        public static let uniqueness = Kind(k: .uniqueness)
        /// `version` or `uniqueness`.
        public var description: String { k.rawValue }
    }

    /// The kind of conflict.
    public let kind: Kind
    /// The object being saved.
    public let objectID: ObjectID
    /// The values the save tried to write, by property name.
    public let objectSnapshot: [String: StoredValue]
    /// The values the object was loaded with (its cached snapshot), by property name.
    public let cachedSnapshot: [String: StoredValue]?
    /// The values now in the store, by property name; nil when the row was deleted.
    public let persistedSnapshot: [String: StoredValue]?
    /// The row version the object was loaded at.
    public let oldVersion: Int64
    /// The row version now in the store; 0 when the row was deleted.
    public let newVersion: Int64
    /// For uniqueness conflicts: the constraint's attribute names.
    public let constraint: [String]
    /// For uniqueness conflicts: the stored objects (or objects saved at the same time) holding
    /// the same values.
    public let conflictingObjectIDs: [ObjectID]

    /// Values the save tried to write, by slot.
    package let objectValues: [StoredValue]
    /// Values now in the store, by slot (nil when deleted).
    package let persistedValues: [StoredValue]?

    package init(
        kind: Kind, objectID: ObjectID, objectValues: [StoredValue], cachedValues: [StoredValue]?,
        persistedValues: [StoredValue]?, oldVersion: Int64, newVersion: Int64,
        constraint: [String] = [], conflictingObjectIDs: [ObjectID] = []
    ) {
        let entity = objectID.entity
        func named(_ values: [StoredValue]) -> [String: StoredValue] {
            var d: [String: StoredValue] = [:]
            for p in entity.storedProperties where p.slot < values.count { d[p.name] = values[p.slot] }
            return d
        }
        self.kind = kind
        self.objectID = objectID
        self.objectValues = objectValues
        self.persistedValues = persistedValues
        self.objectSnapshot = named(objectValues)
        self.cachedSnapshot = cachedValues.map(named)
        self.persistedSnapshot = persistedValues.map(named)
        self.oldVersion = oldVersion
        self.newVersion = newVersion
        self.constraint = constraint
        self.conflictingObjectIDs = conflictingObjectIDs
    }

    /// The kind of conflict, the object and what conflicts with it.
    public var description: String {
        switch kind {
        case .uniqueness:
            return "uniqueness conflict on \(objectID): [\(constraint.joined(separator: ", "))] already used by \(conflictingObjectIDs)"
        default:
            return newVersion == 0
                ? "version conflict on \(objectID): the row was deleted (loaded at version \(oldVersion))"
                : "version conflict on \(objectID): loaded at version \(oldVersion), store has version \(newVersion)"
        }
    }
}
