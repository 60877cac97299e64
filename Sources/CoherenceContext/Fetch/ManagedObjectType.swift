import Foundation

/// Typed fetch helpers on every managed-object class (Ambar's `ManagedObjectType`), each
/// throwing a ``CoherenceError`` instead of swallowing it:
///
/// ```swift
/// let adults = try Person.fetch(in: context, predicate: #Predicate { $0.age >= 18 }, sortedWith: [SortDescriptor(\.name)])
/// let count = try Person.count(in: context)
/// let ada = try Person.findOrFetch(in: context, predicate: #Predicate { $0.name == "Ada" })
/// let towns = try Person.fetchDistinctValues(of: \.town?.name, in: context)
/// let removed = try Person.delete(in: context, predicate: #Predicate { $0.age > 120 })  // not saved yet
/// ```
///
/// Call them on the context's executor. ``ManagedObject`` conforms, so every subclass has them.
public protocol ManagedObjectType: ManagedObject {}

extension ManagedObject: ManagedObjectType {}

extension ManagedObjectType {
    /// A fetch request for this class's entity.
    ///
    /// - Parameters:
    ///   - includePending: whether the context's unsaved changes are included (default true).
    ///   - returnsObjectsAsFaults: whether fetched objects start as faults (default true).
    ///   - prefetching: relationships to load with the objects.
    public static func fetchRequest(
        predicate: Predicate<Self>? = nil, sortedWith sortDescriptors: [SortDescriptor<Self>] = [], includePending: Bool = true,
        returnsObjectsAsFaults: Bool = true, prefetching: [String] = []
    ) -> FetchRequest<Self> {
        var request = FetchRequest<Self>(predicate: predicate, sortBy: sortDescriptors)
        request.includesPendingChanges = includePending
        request.returnsObjectsAsFaults = returnsObjectsAsFaults
        request.relationshipKeyPathsForPrefetching = prefetching
        return request
    }

    /// The objects matching `predicate`, in order.
    /// - Throws: as ``ManagedObjectContext/fetch(_:)->[T]``.
    public static func fetch(
        in context: ManagedObjectContext, predicate: Predicate<Self>? = nil, sortedWith sortDescriptors: [SortDescriptor<Self>] = [],
        includePending: Bool = true, returnsObjectsAsFaults: Bool = true, prefetching: [String] = []
    ) throws(CoherenceError) -> [Self] {
        try context.fetch(
            fetchRequest(
                predicate: predicate, sortedWith: sortDescriptors, includePending: includePending,
                returnsObjectsAsFaults: returnsObjectsAsFaults, prefetching: prefetching))
    }

    /// The number of objects matching `predicate`.
    /// - Throws: as ``ManagedObjectContext/count(for:)``.
    public static func count(
        in context: ManagedObjectContext, predicate: Predicate<Self>? = nil, includePending: Bool = true
    ) throws(CoherenceError) -> Int {
        try context.count(for: fetchRequest(predicate: predicate, includePending: includePending))
    }

    /// The object among those already loaded in the context (registered and not faults) that
    /// matches `predicate`, without reading the store: nil when none does, and nil when several
    /// do (Ambar documents this, though its code returns the first).
    /// - Throws: `.unsupportedPredicate` (or `.unknownEntity`) when the predicate cannot be evaluated.
    public static func find(in context: ManagedObjectContext, predicate: Predicate<Self>) throws(CoherenceError) -> Self? {
        context.assertOnExecutor()
        let entity = try FetchRequest<Self>().entity(in: context.managedObjectModel)
        let compiled = try PredicateCompiler.compile(predicate, entity: entity)
        var found: Self?
        for o in context.allRegisteredObjects where !o.isFault && !o.isDeleted && o.entity.isKindOf(entity) {
            guard let typed = o as? Self, QueryEvaluator.matches(compiled, row: typed) else { continue }
            if found != nil { return nil }
            found = typed
        }
        return found
    }

    /// ``find(in:predicate:)``, else the first stored object matching `predicate`, loaded.
    /// - Throws: as ``find(in:predicate:)`` and ``ManagedObjectContext/fetch(_:)->[T]``.
    public static func findOrFetch(in context: ManagedObjectContext, predicate: Predicate<Self>) throws(CoherenceError) -> Self? {
        if let found = try find(in: context, predicate: predicate) { return found }
        var request = fetchRequest(predicate: predicate, returnsObjectsAsFaults: false)
        request.fetchLimit = 1
        return try context.fetch(request).first
    }

    /// The distinct values of one property among the objects matching `predicate`.
    /// - Throws: as ``ManagedObjectContext/fetch(_:)->[T]``.
    public static func fetchDistinctValues<Value: Hashable>(
        of keyPath: KeyPath<Self, Value>, in context: ManagedObjectContext, predicate: Predicate<Self>? = nil
    ) throws(CoherenceError) -> Set<Value> {
        Set(try fetch(in: context, predicate: predicate, returnsObjectsAsFaults: false).map { $0[keyPath: keyPath] })
    }

    /// A fetched-results controller over this class's objects, not yet fetched (call
    /// ``FetchedResultsController/performFetch()``).
    /// - Throws: `.invalidRequest` without a sort descriptor (Ambar stops the program there).
    public static func fetchedResultsController(
        in context: ManagedObjectContext, sectionNameKeyPath: KeyPath<Self, String>? = nil, predicate: Predicate<Self>? = nil,
        sortedWith sortDescriptors: [SortDescriptor<Self>], includePending: Bool = true, prefetching: [String] = []
    ) throws(CoherenceError) -> FetchedResultsController<Self> {
        guard !sortDescriptors.isEmpty else {
            throw CoherenceError(
                .invalidRequest, "A fetched-results controller needs at least one sort descriptor.", entity: "\(Self.self)")
        }
        return FetchedResultsController(
            fetchRequest: fetchRequest(
                predicate: predicate, sortedWith: sortDescriptors, includePending: includePending, prefetching: prefetching),
            managedObjectContext: context, sectionNameKeyPath: sectionNameKeyPath)
    }

    /// Deletes the objects matching `predicate` from the context (not saved) and returns how
    /// many there were.
    /// - Throws: as ``ManagedObjectContext/fetch(_:)->[T]``.
    @discardableResult
    public static func delete(in context: ManagedObjectContext, predicate: Predicate<Self>? = nil) throws(CoherenceError) -> Int {
        let objects = try fetch(in: context, predicate: predicate)
        for o in objects { context.delete(o) }
        return objects.count
    }
}
