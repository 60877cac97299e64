import Coherence
import Foundation

// A small tour of the engine: a typed model, a SQLite store beside an in-memory store, a save,
// and fetches with #Predicate. (Contexts and the GenericConnect container build on this.)

final class Town: ManagedObject {
    @Attribute(.unique) var name: String = ""
    @Attribute var population: Int = 0
    @Relationship(inverse: "town", deleteRule: .cascade) var people: Set<Person>
}

final class Person: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var age: Int = 0
    @Relationship(inverse: "people") var town: Town?
    override class var indexes: [[String]] { [["age"]] }
}

do {
    let model = try ManagedObjectModel(types: [Town.self, Person.self])
    print("Model: \(model.entities.map(\.name).joined(separator: ", ")) (version \(model.versionHash))")

    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coherence-quickstart-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }

    let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
    let store = try coordinator.addPersistentStore(type: .sqlite, at: directory.appendingPathComponent("QuickStart.sqlite"))
    print("Opened \(store)")

    let count = try coordinator.count(for: FetchRequest<Person>())
    print("People stored: \(count)")
} catch {
    print("QuickStart failed: \(error)")
    exit(1)
}
