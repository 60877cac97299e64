import Foundation

/// A description of objects to fetch, as Core Data's `NSFetchRequest`, with a Foundation
/// `#Predicate` and `SortDescriptor`s.
///
/// ```swift
/// let adults = FetchRequest<Person>(predicate: #Predicate { $0.age >= 18 },
///                                   sortBy: [SortDescriptor(\.name)], fetchLimit: 50)
/// ```
///
/// Predicates are translated to SQL (and evaluated in memory for the in-memory store and for
/// unsaved objects) with the same answers. A predicate that cannot be translated fails with a
/// ``CoherenceError`` `.unsupportedPredicate` naming the part it could not translate.
///
/// For entities of models built in code, use `FetchRequest<ManagedObject>(entityName:)`.
public struct FetchRequest<Entity: ManagedObject>: Sendable {
    /// The entity's name; nil means the entity of the `Entity` class.
    public var entityName: String?
    /// The filter; nil fetches every object.
    public var predicate: Predicate<Entity>?
    /// The ordering; several descriptors break ties in order.
    public var sortDescriptors: [SortDescriptor<Entity>]
    /// The maximum number of results (0: no limit).
    public var fetchLimit: Int
    /// Results to skip.
    public var fetchOffset: Int
    /// Whether objects of sub-entities are included.
    public var includesSubentities: Bool
    /// Whether unsaved changes of the context are included (context fetches).
    public var includesPendingChanges: Bool
    /// Whether fetched objects start as faults (context fetches).
    public var returnsObjectsAsFaults: Bool
    /// To-one and to-many relationships to load with the objects (context fetches).
    public var relationshipKeyPathsForPrefetching: [String]
    /// The properties returned by dictionary fetches (nil: every attribute).
    public var propertiesToFetch: [String]?
    /// Accepted for Core Data compatibility, and not used: a fetch reads the values of every
    /// matching row at once (faults made by `object(with:)` fill up to 512 at a time).
    public var fetchBatchSize: Int

    /// Creates a fetch request.
    public init(
        entityName: String? = nil, predicate: Predicate<Entity>? = nil, sortBy: [SortDescriptor<Entity>] = [],
        fetchLimit: Int = 0, fetchOffset: Int = 0
    ) {
        self.entityName = entityName
        self.predicate = predicate
        self.sortDescriptors = sortBy
        self.fetchLimit = fetchLimit
        self.fetchOffset = fetchOffset
        self.includesSubentities = true
        self.includesPendingChanges = true
        self.returnsObjectsAsFaults = true
        self.relationshipKeyPathsForPrefetching = []
        self.propertiesToFetch = nil
        self.fetchBatchSize = 0
    }

    /// The entity this request fetches, from `model`.
    /// - Throws: `.unknownEntity` when neither the name nor the class names an entity.
    public func entity(in model: ManagedObjectModel) throws(CoherenceError) -> EntityDescription {
        if let entityName {
            guard let e = model.entitiesByName[entityName] else {
                throw CoherenceError(.unknownEntity, "The model has no entity named '\(entityName)'.", entity: entityName)
            }
            if Entity.self != ManagedObject.self, !(e.managedObjectClass is Entity.Type) {
                throw CoherenceError(.unknownEntity, "Entity '\(entityName)' is not of class \(Entity.self).", entity: entityName)
            }
            return e
        }
        guard let e = model.entity(for: Entity.self) else {
            throw CoherenceError(
                .unknownEntity, "The model has no entity for class \(Entity.self); set entityName.", entity: "\(Entity.self)")
        }
        return e
    }

    /// Compiles the request for stores.
    package func storeFetch(in model: ManagedObjectModel) throws(CoherenceError) -> StoreFetch {
        let entity = try self.entity(in: model)
        guard fetchLimit >= 0, fetchOffset >= 0 else {
            throw CoherenceError(.invalidRequest, "fetchLimit and fetchOffset must not be negative.", entity: entity.name)
        }
        let compiled = try predicate.map { p throws(CoherenceError) in try PredicateCompiler.compile(p, entity: entity) }
        let keys = try PredicateCompiler.sortKeys(sortDescriptors, entity: entity)
        return StoreFetch(
            entity: entity, includesSubentities: includesSubentities, predicate: compiled, sortKeys: keys,
            limit: fetchLimit > 0 ? fetchLimit : nil, offset: fetchOffset)
    }
}
