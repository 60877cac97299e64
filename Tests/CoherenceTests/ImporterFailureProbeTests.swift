import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// A person the importer refuses to insert when its name starts with "bad".
final class IfTown: ManagedObject {
    @Attribute(.unique) var name: String = ""
    @Relationship(inverse: "town") var people: Set<IfPerson>
}

final class IfPerson: ManagedObject {
    @Attribute(.unique) var name: String = ""
    @Relationship(inverse: "people") var town: IfTown?
    @Relationship(inverse: "members") var clubs: Set<IfClub>
    override func validateForInsert() throws {
        if name.hasPrefix("bad") { throw CoherenceError(.validation, "no bad people") }
    }
}

final class IfClub: ManagedObject {
    @Attribute(.unique) var title: String = ""
    @Relationship(inverse: "clubs") var members: Set<IfPerson>
}

/// The store as a fresh coordinator reads it: each person with town and clubs, each club with
/// its members.
private func snapshot(_ url: URL, _ model: ManagedObjectModel) throws -> [String] {
    let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
    let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
    defer { try? coordinator.remove(store) }
    let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
    return try context.performAndWait {
        let people = try context.fetch(FetchRequest<IfPerson>()).map {
            "person \($0.name) town=\($0.town?.name ?? "-") clubs=\($0.clubs.map(\.title).sorted())"
        }
        let clubs = try context.fetch(FetchRequest<IfClub>()).map { "club \($0.title) members=\($0.members.map(\.name).sorted())" }
        let towns = try context.fetch(FetchRequest<IfTown>()).map { "town \($0.name) people=\($0.people.map(\.name).sorted())" }
        return (people + clubs + towns).sorted()
    }
}

@Suite("Dual coordinator: an import with relationships failing part-way", .timeLimit(.minutes(2)))
struct ImporterFailureProbeTests {
    func container(_ dir: TemporaryDirectory) throws -> (DualCoordinatorContainer, ManagedObjectModel, URL) {
        let model = try ManagedObjectModel(types: [IfTown.self, IfPerson.self, IfClub.self])
        let url = dir.file("Import.sqlite")
        return (try DualCoordinatorContainer(storeType: .sqlite, managedObjectModel: model, storeURL: url), model, url)
    }

    func seed(_ importer: ManagedObjectContext) throws {
        try importer.performAndWait {
            let nice = IfTown(context: importer)
            nice.name = "Nice"
            let chess = IfClub(context: importer)
            chess.title = "Chess"
            let go = IfClub(context: importer)
            go.title = "Go"
            let ann = IfPerson(context: importer)
            ann.name = "ann"
            ann.town = nice
            ann.clubs = [chess]
            try importer.save()
        }
    }

    /// One save setting to-one, to-many and many-to-many relationships fails (a validation
    /// error, then a uniqueness conflict under `.error`): the file is exactly as before, the
    /// view context never sees the changes, and the importer, rolled back or corrected, saves
    /// the rest.
    @Test(arguments: ["validation", "uniqueness"])
    func aFailedImportLeavesTheStoreAndTheViewContextAsTheyWere(_ failure: String) async throws {
        let dir = try TemporaryDirectory()
        let (container, model, url) = try container(dir)
        try seed(container.importerContext())
        let before = try snapshot(url, model)
        // The view context holds ann and her clubs.
        let view = container.viewContext
        let shownBefore = try await view.perform {
            try view.fetch(FetchRequest<IfPerson>()).map { "\($0.name) \($0.town?.name ?? "-") \($0.clubs.map(\.title).sorted())" }
        }
        let importer = container.importerContext()
        if failure == "uniqueness" { importer.mergePolicy = .error }
        let firstCode = try importer.performAndWait { () -> CoherenceError.Code? in
            let nice = try #require(try importer.fetch(FetchRequest<IfTown>()).first)
            let clubs = try importer.fetch(FetchRequest<IfClub>())
            let chess = try #require(clubs.first { $0.title == "Chess" }), go = try #require(clubs.first { $0.title == "Go" })
            let ann = try #require(try importer.fetch(FetchRequest<IfPerson>()).first)
            let lyon = IfTown(context: importer)
            lyon.name = "Lyon"
            ann.town = lyon
            ann.clubs = [go]
            let bob = IfPerson(context: importer)
            bob.name = "bob"
            bob.town = nice
            bob.clubs = [chess, go]
            let spoiler = IfPerson(context: importer)
            spoiler.clubs = [chess]
            spoiler.town = nice
            if failure == "validation" {
                spoiler.name = "bad-one"
            } else {
                spoiler.name = "ann2"
                let dup = IfClub(context: importer)
                dup.title = "Chess"
                dup.members = [spoiler]
            }
            do {
                try importer.save()
                return nil
            } catch {
                return (error as? CoherenceError)?.code
            }
        }
        #expect(firstCode == (failure == "validation" ? .validation : .conflict))
        #expect(try snapshot(url, model) == before)
        let shownAfterFailure = try await view.perform {
            try view.fetch(FetchRequest<IfPerson>()).map { "\($0.name) \($0.town?.name ?? "-") \($0.clubs.map(\.title).sorted())" }
        }
        #expect(shownAfterFailure == shownBefore)
        // Corrected, the importer saves the rest.
        try importer.performAndWait {
            if failure == "validation" {
                let spoiler = try #require(importer.insertedObjects.compactMap { $0 as? IfPerson }.first { $0.name == "bad-one" })
                importer.delete(spoiler)
            } else {
                let dup = try #require(importer.insertedObjects.compactMap { $0 as? IfClub }.first)
                importer.delete(dup)
                let spoiler = try #require(importer.insertedObjects.compactMap { $0 as? IfPerson }.first { $0.name == "ann2" })
                importer.delete(spoiler)
            }
            try importer.save()
        }
        let expected = [
            "club Chess members=[\"bob\"]", "club Go members=[\"ann\", \"bob\"]",
            "person ann town=Lyon clubs=[\"Go\"]", "person bob town=Nice clubs=[\"Chess\", \"Go\"]",
            "town Lyon people=[\"ann\"]", "town Nice people=[\"bob\"]"
        ]
        #expect(try snapshot(url, model) == expected)
        // The view context follows the saved import.
        let shown = try await view.perform {
            try view.fetch(FetchRequest<IfPerson>(sortBy: [SortDescriptor(\.name)])).map {
                "\($0.name) \($0.town?.name ?? "-") \($0.clubs.map(\.title).sorted())"
            }
        }
        #expect(shown == ["ann Lyon [\"Go\"]", "bob Nice [\"Chess\", \"Go\"]"])
    }
}
