import Foundation

/// Sets attributes of every object a predicate matches, straight in the store, without
/// managed objects, as Core Data's `NSBatchUpdateRequest`.
///
/// ```swift
/// var request = BatchUpdateRequest<Person>(predicate: #Predicate { $0.age >= 65 },
///                                          propertiesToUpdate: ["retired": true, "discount": 0.2])
/// request.resultType = .count
/// let changed = try context.execute(request).count
/// ```
///
/// The predicate is a `#Predicate` compiled as a fetch's (one that cannot be translated fails
/// with `.unsupportedPredicate` naming the part). The values are checked once — an unknown key
/// is `.unknownKey`, a wrong type `.typeMismatch`, nil for a required attribute or a value
/// outside the attribute's rules `.validation` — and written to every matching row in one
/// transaction. Each row's version moves on, so a context that holds one of the objects with
/// unsaved changes meets a version conflict when it saves it (its merge policy decides). A
/// value that a uniqueness constraint refuses fails the request with `.conflict`, and nothing
/// is written.
///
/// Contexts keep the old values until they refresh; merge the result's
/// ``BatchResult/changes`` into them (see ``BatchResult``).
public struct BatchUpdateRequest<Entity: ManagedObject>: Sendable {
    /// The entity's name; nil means the entity of the `Entity` class.
    public var entityName: String?
    /// The objects to update; nil updates every object of the entity.
    public var predicate: Predicate<Entity>?
    /// The new values by attribute name (`nil` or `NSNull` for nil).
    public var propertiesToUpdate: [String: any Sendable]
    /// Whether objects of sub-entities are updated too (default true).
    public var includesSubentities: Bool = true
    /// What the result holds (default ``BatchRequestResultType/statusOnly``).
    public var resultType: BatchRequestResultType = .statusOnly
    /// The stores to update (nil: every attached store that holds the entity).
    public var affectedStores: [PersistentStore]?

    /// Creates a request.
    public init(entityName: String? = nil, predicate: Predicate<Entity>? = nil, propertiesToUpdate: [String: any Sendable] = [:]) {
        self.entityName = entityName
        self.predicate = predicate
        self.propertiesToUpdate = propertiesToUpdate
    }

    /// The request as stores run it.
    /// - Throws: `.unknownEntity`, `.unsupportedPredicate`, `.unknownKey`, `.typeMismatch`,
    ///   `.invalidRequest` (nothing to update).
    package func storeRequest(in model: ManagedObjectModel) throws(CoherenceError) -> StoreBatchRequest {
        var fetchRequest = FetchRequest<Entity>(entityName: entityName, predicate: predicate)
        fetchRequest.includesSubentities = includesSubentities
        let fetch = try fetchRequest.storeFetch(in: model)
        let converter = BatchValueConverter(entity: fetch.entity, request: "Batch update of '\(fetch.entity.name)'")
        guard !propertiesToUpdate.isEmpty else {
            throw CoherenceError(
                .invalidRequest, "The batch update of '\(fetch.entity.name)' has no properties to update.", entity: fetch.entity.name)
        }
        var assignments: [(attribute: AttributeDescription, value: StoredValue)] = []
        for (key, value) in propertiesToUpdate {
            let a = try converter.attribute(key, row: nil)
            assignments.append((a, try converter.stored(value, for: a, row: nil)))
        }
        assignments.sort { $0.attribute.slot < $1.attribute.slot }
        return .update(StoreBatchRequest.Update(fetch: fetch, attributes: assignments.map(\.attribute), values: assignments.map(\.value)))
    }
}
