import Foundation

/// An incoming value (a decoded JSON item, a row of a file) that imports itself into a context,
/// in two phases (RCDataKit's `Persistable`):
///
/// 1. ``generateImporterData(objects:context:)`` is called **once** per import with every
///    incoming value — typically one fetch that loads the stored objects the values refer to
///    into dictionaries keyed by their identifiers;
/// 2. ``importIntoContext(_:importerData:)`` is called for each value, in order, and may
///    update the shared importer data (add what it inserted, so later values find it).
///
/// ```swift
/// struct IncomingPerson: Persistable, Identifiable {
///     let id: Int; let name: String
///
///     static func generateImporterData(objects: [IncomingPerson], context: ManagedObjectContext) throws -> [Int: Person] {
///         let people = try context.fetch(FetchRequest<Person>().where(.in(\.key, objects.map(\.id))))
///         return Dictionary(people.map { ($0.key, $0) }, uniquingKeysWith: { a, _ in a })
///     }
///
///     func importIntoContext(_ context: ManagedObjectContext, importerData: inout [Int: Person]) -> PersistenceResult {
///         if let person = importerData[id] {
///             return person.update(\.name, value: name) ? .update(person.objectID) : .noAction
///         }
///         let person = Person(context: context)
///         person.key = id
///         person.name = name
///         importerData[id] = person
///         return .insert(person.objectID)
///     }
/// }
///
/// let results = try context.importPersistableObjects(incoming)  // [Int: PersistenceResult]
/// try context.save()
/// ```
///
/// Nothing is saved by the import.
public protocol Persistable {
    /// What the first phase prepares for the second (`Void` when nothing is needed).
    associatedtype ImporterData

    /// Prepares the import of `objects`, once. Throwing stops the import before any value is
    /// imported.
    static func generateImporterData(objects: [Self], context: ManagedObjectContext) throws -> ImporterData

    /// Imports this value into `context`.
    /// - Returns: what it did; a failure is ``PersistenceResult/fail(_:)``, and the import goes
    ///   on with the next value.
    func importIntoContext(_ context: ManagedObjectContext, importerData: inout ImporterData) -> PersistenceResult
}

extension Persistable where ImporterData == Void {
    /// Nothing to prepare.
    public static func generateImporterData(objects: [Self], context: ManagedObjectContext) throws {}
}

/// What importing one ``Persistable`` value did.
public enum PersistenceResult: Sendable {
    /// It inserted the object with this (temporary) ID.
    case insert(ObjectID)
    /// It changed the object with this ID.
    case update(ObjectID)
    /// It deleted the object with this ID.
    case delete(ObjectID)
    /// It changed nothing.
    case noAction
    /// It failed with this error.
    case fail(any Error)
}

extension ManagedObjectContext {
    /// Imports values: ``Persistable/generateImporterData(objects:context:)`` once, then
    /// ``Persistable/importIntoContext(_:importerData:)`` for each value in order. Nothing is
    /// saved. Call it on the context's queue.
    ///
    /// - Returns: each value's result, in the order of `objects`.
    /// - Throws: the error of `generateImporterData` (then no value has been imported).
    public func importPersistableObjects<T: Persistable>(_ objects: [T]) throws -> [PersistenceResult] {
        assertOnExecutor()
        var data = try T.generateImporterData(objects: objects, context: self)
        var results: [PersistenceResult] = []
        results.reserveCapacity(objects.count)
        for object in objects {
            results.append(object.importIntoContext(self, importerData: &data))
        }
        return results
    }

    /// Imports `Identifiable` values as the array form, and returns each
    /// value's result under its `id` (a later value with the same `id` replaces the earlier
    /// one's result).
    /// - Throws: the error of `generateImporterData` (then no value has been imported).
    public func importPersistableObjects<T: Persistable & Identifiable>(_ objects: [T]) throws -> [T.ID: PersistenceResult] {
        let results: [PersistenceResult] = try importPersistableObjects(objects)
        var byID: [T.ID: PersistenceResult] = [:]
        byID.reserveCapacity(objects.count)
        for (object, result) in zip(objects, results) { byID[object.id] = result }
        return byID
    }
}
