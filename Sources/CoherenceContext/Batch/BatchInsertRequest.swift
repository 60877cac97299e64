import Foundation

/// Inserts many objects of one entity straight into the store, without managed objects, as
/// Core Data's `NSBatchInsertRequest`.
///
/// Give the rows as dictionaries of attribute values by name, or fill them one at a time with
/// a handler:
///
/// ```swift
/// var request = BatchInsertRequest<Person>(objects: [
///     ["name": "Ada", "age": 36],
///     ["name": "Bob", "age": 28],
/// ])
/// request.resultType = .objectIDs
/// let result = try context.execute(request)
///
/// var n = 0
/// let generated = BatchInsertRequest<Person>(dictionaryHandler: { row in
///     guard n < 100_000 else { return true }      // true: no more rows
///     row["name"] = "person \(n)"
///     n += 1
///     return false
/// })
/// try context.execute(generated)
/// ```
///
/// The rows are written in one transaction: all of them or, when any fails, none. Each is
/// checked as a save checks an object: an unknown key is `.unknownKey`, a value of the wrong
/// type `.typeMismatch`, a nil required attribute or a value outside its validation rules
/// `.validation` — each naming the entity, the property and the row. Attributes a row leaves
/// out get their default values; relationships cannot be set.
///
/// A row whose values a uniqueness constraint already holds fails the request with a
/// `.conflict` error naming the entity, the constraint, the values and the stored row — unless
/// the merge policy says otherwise, as in Core Data: under
/// ``MergePolicy/mergeByPropertyObjectTrump`` or ``MergePolicy/overwrite`` the stored row takes
/// the new row's attribute values (an upsert; its version moves on), under
/// ``MergePolicy/mergeByPropertyStoreTrump`` or ``MergePolicy/rollback`` the stored row is kept
/// and the new one dropped. The policy is the request's ``mergePolicy``, else the executing
/// context's (``MergePolicy/error`` through the coordinator).
///
/// Contexts do not see the new rows until they fetch them; merge the result's
/// ``BatchResult/changes`` to refresh objects they hold (see ``BatchResult``).
public struct BatchInsertRequest<Entity: ManagedObject> {
    /// The entity's name; nil means the entity of the `Entity` class.
    public var entityName: String?
    /// The rows: attribute values by name (`nil` or `NSNull` for nil).
    public var objectsToInsert: [[String: any Sendable]]?
    /// Fills one row per call (the dictionary is empty on entry) and returns false, or returns
    /// true when there are no more rows (that call's dictionary is not inserted). Called while
    /// the request runs, holding the coordinator's save lock: it may read, but must not save,
    /// obtain permanent IDs or run another batch request through the same coordinator.
    public var dictionaryHandler: ((inout [String: any Sendable]) -> Bool)?
    /// Sets the attributes of a new object of the entity (one not in any context) per call and
    /// returns false, or returns true when there are no more rows. Its attribute values are
    /// inserted; its relationships are ignored. Called as ``dictionaryHandler`` is.
    public var managedObjectHandler: ((Entity) -> Bool)?
    /// What the result holds (default ``BatchRequestResultType/statusOnly``).
    public var resultType: BatchRequestResultType = .statusOnly
    /// How a row that meets a stored row on a uniqueness constraint is resolved (nil: the
    /// executing context's policy, ``MergePolicy/error`` through the coordinator).
    public var mergePolicy: MergePolicy?
    /// The stores to insert into: the first that holds the entity (nil: every attached store).
    public var affectedStores: [PersistentStore]?

    /// A request that inserts `objects`.
    public init(entityName: String? = nil, objects: [[String: any Sendable]]) {
        self.entityName = entityName
        self.objectsToInsert = objects
    }

    /// A request whose rows `dictionaryHandler` fills one at a time until it returns true.
    public init(entityName: String? = nil, dictionaryHandler: @escaping (inout [String: any Sendable]) -> Bool) {
        self.entityName = entityName
        self.dictionaryHandler = dictionaryHandler
    }

    /// A request whose rows `managedObjectHandler` fills one object at a time until it returns
    /// true.
    public init(entityName: String? = nil, managedObjectHandler: @escaping (Entity) -> Bool) {
        self.entityName = entityName
        self.managedObjectHandler = managedObjectHandler
    }

    /// The request as stores run it.
    /// - Throws: `.unknownEntity`, `.invalidRequest` (an abstract entity, or no rows given).
    package func storeRequest(in model: ManagedObjectModel, mergePolicy: MergePolicy) throws(CoherenceError) -> StoreBatchRequest {
        var insert = try storeInsert(in: model, mergePolicy: mergePolicy)
        insert.listsRows = resultType == .objectIDs
        return .insert(insert)
    }

    /// The insert as stores run it (listing its rows).
    private func storeInsert(in model: ManagedObjectModel, mergePolicy: MergePolicy) throws(CoherenceError) -> StoreBatchRequest.Insert {
        let entity = try FetchRequest<Entity>(entityName: entityName).entity(in: model)
        guard !entity.isAbstract else {
            throw CoherenceError(
                .invalidRequest, "Entity '\(entity.name)' is abstract; a batch insert needs a concrete entity.", entity: entity.name)
        }
        let converter = BatchValueConverter(entity: entity, request: "Batch insert into '\(entity.name)'")
        var row = 0
        let next: (inout [StoredValue]) throws(CoherenceError) -> Bool
        if let objects = objectsToInsert {
            next = { (values: inout [StoredValue]) throws(CoherenceError) -> Bool in
                guard row < objects.count else { return false }
                try converter.fill(&values, from: objects[row], row: row)
                row += 1
                return true
            }
        } else if let handler = dictionaryHandler {
            var dictionary: [String: any Sendable] = [:]
            next = { (values: inout [StoredValue]) throws(CoherenceError) -> Bool in
                dictionary.removeAll(keepingCapacity: true)
                if handler(&dictionary) { return false }
                try converter.fill(&values, from: dictionary, row: row)
                row += 1
                return true
            }
        } else if let handler = managedObjectHandler {
            let slots = entity.storedAttributeSlots
            next = { (values: inout [StoredValue]) throws(CoherenceError) -> Bool in
                guard let object = entity.managedObjectClass.init(entity: entity) as? Entity else {
                    throw CoherenceError(
                        .unknownEntity, "Entity '\(entity.name)' is not of class \(Entity.self).", entity: entity.name)
                }
                if handler(object) { return false }
                for slot in slots { values[slot] = object._storedValue(at: slot) }
                row += 1
                return true
            }
        } else {
            throw CoherenceError(
                .invalidRequest, "The batch insert into '\(entity.name)' has no objects and no handler.", entity: entity.name)
        }
        let resolution: StoreBatchRequest.UniquenessResolution
        switch mergePolicy.kind {
        case .error: resolution = .fail
        case .objectTrump, .overwrite: resolution = .updateExisting
        case .storeTrump, .rollback: resolution = .keepExisting
        }
        return StoreBatchRequest.Insert(entity: entity, uniquenessConflicts: resolution, rowCount: objectsToInsert?.count, nextRow: next)
    }
}
