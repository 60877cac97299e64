import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

@Suite("Dual coordinator: the writer coordinator reads the view context's saves", .timeLimit(.minutes(3)))
struct DualCoordinatorWriterCacheTests {
    /// The writer coordinator had cached a row; the view context then saved the object through
    /// the container's coordinator. An importer context made afterwards reads the saved values,
    /// by ID and by fetch, and its own save of another property keeps them.
    @Test func anImporterMadeAfterAViewSaveReadsIt() async throws {
        let dir = try TemporaryDirectory()
        let container = try DualCoordinatorContainer(
            managedObjectModel: try ManagedObjectModel(types: [Town.self, Person.self, Club.self]), storeURL: dir.file("d.sqlite"))
        let first = container.importerContext()
        let id: ObjectID = try await first.perform {
            let person = Person(context: first)
            person.name = "Ann"
            try first.save()
            return person.objectID
        }
        let reader = container.importerContext()
        #expect(try await reader.perform { try reader.existing(Person.self, withID: id).name } == "Ann")  // cached by the writer
        let view = container.viewContext
        try await view.perform {
            try view.existing(Person.self, withID: id).name = "Ada"
            try view.save()
        }
        let importer = container.importerContext()
        #expect(try await importer.perform { try importer.existing(Person.self, withID: id).name } == "Ada")
        #expect(try await importer.perform { try importer.fetch(FetchRequest<Person>()).map(\.name) } == ["Ada"])
        try await importer.perform {
            try importer.existing(Person.self, withID: id).age = 3
            try importer.save()
        }
        let check = container.temporaryContext()
        let stored = try await check.perform { () -> String in
            let person = try check.existing(Person.self, withID: id)
            return "\(person.name) \(person.age)"
        }
        #expect(stored == "Ada 3")
    }
}
