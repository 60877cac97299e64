import Foundation

/// An error from Coherence's object graph, stores and fetches.
///
/// It names what was involved: the store, entity, object, property and SQL where they are
/// known. The `code` is a struct over a private enum, so new codes never break a `switch`.
///
/// ```swift
/// do { try person.setValue("old", forKey: "age") }
/// catch let error as CoherenceError where error.code == .typeMismatch { print(error) }
/// ```
public struct CoherenceError: Error, CustomStringConvertible, Sendable {
    /// What went wrong.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: String, Hashable, Sendable {
            case unknownKey, typeMismatch, validation, unsupportedPredicate, unknownEntity
            case storeNotFound, storeIncompatible, storeOpenFailed, storeReadFailed, storeWriteFailed, storeNotAttached
            case noStoreForEntity
            case objectNotFound, conflict, invalidURI, corruptRow, invalidRequest, invalidLocation
            case deleteDenied, contextMismatch, alreadyAttached, crossStoreRelationship
            case historyTokenExpired, invalidHistoryToken, historyTrackingRequired
            case queryGenerationsUnsupported, invalidQueryGenerationToken
            case readOnlyContext
            case migrationNotInferable, migrationMissingValues, migrationUniquenessViolated, migrationFailed
            case storeLayoutMismatch
            case timeout, connectionLost
        }
        private let kind: Kind
        /// A key that is not a property of the entity.
        public static let unknownKey = Code(kind: .unknownKey)
        /// A value of the wrong type for a property.
        public static let typeMismatch = Code(kind: .typeMismatch)
        /// Validation failed at save.
        public static let validation = Code(kind: .validation)
        /// A predicate (or sort) that cannot be translated.
        public static let unsupportedPredicate = Code(kind: .unsupportedPredicate)
        /// An entity that is not in the model.
        public static let unknownEntity = Code(kind: .unknownEntity)
        /// No store at the location.
        public static let storeNotFound = Code(kind: .storeNotFound)
        /// A store made for another model.
        public static let storeIncompatible = Code(kind: .storeIncompatible)
        /// A store could not be opened or created (when it is attached; reads and saves of an
        /// attached store report ``storeReadFailed`` and ``storeWriteFailed``).
        public static let storeOpenFailed = Code(kind: .storeOpenFailed)
        /// Reading an attached store failed: a fetch, a count or a fault met a damaged file, an
        /// I/O error or a missing table. The error names the ``CoherenceError/store`` and the
        /// ``CoherenceError/sql`` that failed, with the ``SQLiteError`` in
        /// ``CoherenceError/underlyingErrors``; nothing in the context changes.
        ///
        /// ```swift
        /// do { try person.fulfillFault() }
        /// catch let error where error.code == .storeReadFailed { print(error.store ?? "", error.sql ?? "") }
        /// ```
        public static let storeReadFailed = Code(kind: .storeReadFailed)
        /// Writing to an attached store failed: a save (or reserving primary keys) was refused by
        /// the database — a constraint or trigger, a full disk, a read-only or locked file. The
        /// error names the ``CoherenceError/store`` and the ``CoherenceError/sql`` that failed,
        /// with the ``SQLiteError`` in ``CoherenceError/underlyingErrors``; the transaction is
        /// rolled back, so the store is as it was. (A uniqueness violation is a ``conflict``.)
        public static let storeWriteFailed = Code(kind: .storeWriteFailed)
        /// A server store's statement or lock timeout ended a fetch or a save (the URL's
        /// `statement_timeout` or `lock_timeout`). A save that timed out changed nothing.
        ///
        /// ```swift
        /// do { try context.save() }
        /// catch let error as CoherenceError where error.code == .timeout { retryLater() }
        /// ```
        public static let timeout = Code(kind: .timeout)
        /// The connection to a server store was lost (the server restarted, or the network or
        /// the server dropped it). A save that was in flight changed nothing, unless the
        /// connection broke while its commit was under way: then whether it committed is not
        /// known. The store reconnects for the next fetch or save.
        public static let connectionLost = Code(kind: .connectionLost)
        /// A store that is not attached to the coordinator.
        public static let storeNotAttached = Code(kind: .storeNotAttached)
        /// No attached store holds the entity.
        public static let noStoreForEntity = Code(kind: .noStoreForEntity)
        /// The object's row does not exist.
        public static let objectNotFound = Code(kind: .objectNotFound)
        /// Optimistic-locking or uniqueness conflicts (see ``conflicts``).
        public static let conflict = Code(kind: .conflict)
        /// A URI that is not an object ID of this coordinator.
        public static let invalidURI = Code(kind: .invalidURI)
        /// A stored row whose values do not fit the model.
        public static let corruptRow = Code(kind: .corruptRow)
        /// A request that makes no sense (for example a negative limit).
        public static let invalidRequest = Code(kind: .invalidRequest)
        /// A location that is unsafe or unusable.
        public static let invalidLocation = Code(kind: .invalidLocation)
        /// A deny delete rule refused a delete.
        public static let deleteDenied = Code(kind: .deleteDenied)
        /// Objects from different contexts mixed.
        public static let contextMismatch = Code(kind: .contextMismatch)
        /// A store that is already attached.
        public static let alreadyAttached = Code(kind: .alreadyAttached)
        /// A save would relate two objects that live in different stores; relationships cannot
        /// cross stores. The error names the entity, the relationship (``propertyName``), the
        /// source object, its ``store`` and the destination's ``destinationStore``; nothing is
        /// written.
        public static let crossStoreRelationship = Code(kind: .crossStoreRelationship)
        /// A history fetch after a token (or transaction) whose following transactions were
        /// deleted (``PersistentHistoryChangeRequest/deleteHistory(before:)-(PersistentHistoryToken?)``),
        /// so the history since then is incomplete; or a token newer than the store's history (a
        /// store replaced by an older copy). Core Data's `NSPersistentHistoryTokenExpiredError`.
        /// Recover by reading your objects again (refetch, or `reset()` the contexts), then
        /// fetch from the oldest remaining transaction (`fetchHistory(after: nil)`) or from
        /// ``PersistentStoreCoordinator/currentPersistentHistoryToken(fromStores:)``, and store
        /// that token instead of the old one.
        public static let historyTokenExpired = Code(kind: .historyTokenExpired)
        /// A history token of a store that is not attached to the coordinator, or not the store
        /// a request is limited to (``PersistentHistoryChangeRequest/affectedStores``). The error
        /// names the token's store.
        public static let invalidHistoryToken = Code(kind: .invalidHistoryToken)
        /// A store that records persistent history was opened without
        /// ``StoreOptions/persistentHistoryTracking``: the store is not attached and is left as it
        /// was (history included); open it with the option on. Also the error of a save or batch
        /// request on a store opened without the option after another coordinator (another
        /// process) turned history on for it: nothing is written; open the store again with the
        /// option.
        /// (Core Data opens such a store read-only instead.)
        public static let historyTrackingRequired = Code(kind: .historyTrackingRequired)
        /// A context cannot be pinned to a query generation because a store of its coordinator
        /// cannot hold a snapshot: a SQLite store that is not in WAL mode. The error names the
        /// ``CoherenceError/store``; the context's generation is left as it was. (Core Data stops
        /// with "Unsupported feature in this configuration" there.) See
        /// ``ManagedObjectContext/setQueryGeneration(from:)``.
        public static let queryGenerationsUnsupported = Code(kind: .queryGenerationsUnsupported)
        /// A ``QueryGenerationToken`` that cannot be used: its snapshot was released (no context
        /// held it any more, or it was left idle past
        /// ``PersistentStoreCoordinator/queryGenerationIdleTimeout``), or it belongs to another
        /// coordinator. The context's generation is left as it was.
        public static let invalidQueryGenerationToken = Code(kind: .invalidQueryGenerationToken)
        /// A save from a context that may not write: the read-only view context of a
        /// `DualCoordinatorContainer` (or of its strategy), one of its temporary contexts, or an
        /// editor context while the view context is read-only. Nothing is written or pushed, and
        /// the context keeps its changes (roll them back, or save them from a context that
        /// writes).
        public static let readOnlyContext = Code(kind: .readOnlyContext)
        /// A store made with another model version cannot be migrated to this one by inference:
        /// the error names what cannot be mapped (an attribute's type change, two entities that
        /// would share a table, …) with its ``CoherenceError/entityName`` and
        /// ``CoherenceError/propertyName``. The store is left as it was.
        public static let migrationNotInferable = Code(kind: .migrationNotInferable)
        /// A migration would leave a required attribute without a value: it has no default value
        /// and existing rows have none. The error names the entity, the attribute
        /// (``CoherenceError/propertyName``) and the number of rows in its message. The store is
        /// left as it was.
        public static let migrationMissingValues = Code(kind: .migrationMissingValues)
        /// A migration adds a uniqueness constraint that existing rows violate: the message lists
        /// the duplicated values. The store is left as it was.
        public static let migrationUniquenessViolated = Code(kind: .migrationUniquenessViolated)
        /// A migration failed for another reason (a stage's handler threw, or the database
        /// refused a step); the message names the stage. The store is left as it was.
        public static let migrationFailed = Code(kind: .migrationFailed)
        /// A store made by Apple's Core Data whose tables do not match the model: a missing
        /// table or column, an entity missing from `Z_PRIMARYKEY` or with another parent, a
        /// column whose type does not hold the attribute's, a relationship kept in a way Coherence
        /// cannot map. The message names the table and column; the store is left as it was.
        ///
        /// ```swift
        /// catch let error as CoherenceError where error.code == .storeLayoutMismatch {
        ///     print(error.entityName ?? "", error.propertyName ?? "", error.message)
        /// }
        /// ```
        public static let storeLayoutMismatch = Code(kind: .storeLayoutMismatch)
        /// The code's name, for example `storeIncompatible`.
        public var description: String { kind.rawValue }
    }

    /// What went wrong.
    public let code: Code
    /// A readable explanation.
    public let message: String
    /// The entity involved, if any.
    public var entityName: String?
    /// The property involved, if any.
    public var propertyName: String?
    /// The object involved, if any.
    public var objectID: ObjectID?
    /// The store involved (its URL, or "in-memory <UUID>"), if any.
    public var store: String?
    /// The other store involved, if any: for ``Code/crossStoreRelationship``, the store of the
    /// relationship's destination (``store`` is the source object's).
    public var destinationStore: String?
    /// The SQL involved, if any (never with bound values).
    public var sql: String?
    /// Conflicts found by a save (for ``Code/conflict``).
    public var conflicts: [SaveConflict] = []
    /// Further errors (for example every validation failure of a save).
    public var underlyingErrors: [any Error & Sendable] = []

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, entity: String? = nil, property: String? = nil, objectID: ObjectID? = nil,
        store: String? = nil, sql: String? = nil
    ) {
        self.code = code
        self.message = message
        self.entityName = entity
        self.propertyName = property
        self.objectID = objectID
        self.store = store
        self.sql = sql
    }

    /// The code, the message and the context that is known (entity, property, object, store, SQL).
    public var description: String {
        var s = "Coherence error [\(code)]: \(message)"
        var context: [String] = []
        if let entityName { context.append("entity '\(entityName)'") }
        if let propertyName { context.append("property '\(propertyName)'") }
        if let objectID { context.append("object \(objectID)") }
        if let store { context.append("store \(store)") }
        if let destinationStore { context.append("destination store \(destinationStore)") }
        if let sql { context.append("SQL `\(sql)`") }
        if !context.isEmpty { s += " (" + context.joined(separator: ", ") + ")" }
        for e in underlyingErrors { s += "\n  - \(e)" }
        return s
    }
}
