import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// A fetched object's first change keeps only the changed slots' committed values (a sparse
/// snapshot) and changes its values in place. Everything that reads the committed state must
/// see the same thing as with a full snapshot.
@Suite struct SparseSnapshotTests {
    /// A store with one town, "Rome", population 10.
    static func store(_ dir: TemporaryDirectory) throws -> PersistentStoreCoordinator {
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let t = Town(context: context)
            t.name = "Rome"
            t.population = 10
            try context.save()
        }
        return coordinator
    }

    @Test func aFirstChangeKeepsOnlyTheChangedSlotsCommittedValue() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try Self.store(dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let town = try #require(try context.fetch(FetchRequest<Town>()).first)
            town.population = 11
            #expect(town._state.originals?.map(\.slot) == [try #require(town.entity.propertiesByName["population"]?.slot)])
            #expect(town.committedValues(forKeys: ["name", "population"])["population"] as? Int == 10)
            #expect(town.committedValues(forKeys: ["name"])["name"] as? String == "Rome")
            #expect(town.changedValues().keys.sorted() == ["population"])
            #expect(town.hasChanges && context.updatedObjects.count == 1)
            town.name = "Roma"  // a second slot joins the sparse snapshot
            #expect(town._state.originals?.count == 2)
            town.population = 10  // back to its committed value
            #expect(town.changedValues().keys.sorted() == ["name"])
            town.name = "Rome"
            #expect(!town.hasChanges && context.updatedObjects.isEmpty)
            town.population = 12
            try context.save()
            #expect(town._state.originals?.isEmpty == true && !town.hasChanges)
            #expect(town.committedValues(forKeys: ["population"])["population"] as? Int == 12)
            context.reset()
            #expect(try context.fetch(FetchRequest<Town>()).first?.population == 12)
        }
    }

    @Test func rollbackRestoresASparseSnapshot() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try Self.store(dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let town = try #require(try context.fetch(FetchRequest<Town>()).first)
            town.population = 99
            town.name = "Milan"
            context.rollback()
            #expect(town.population == 10 && town.name == "Rome")
            #expect(!town.hasChanges && town._state.originals?.isEmpty == true)
        }
    }

    @Test func aConflictReportsTheLoadedValuesOfASparseObject() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try Self.store(dir)
        let mine = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let theirs = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let town = try mine.performAndWait { try #require(try mine.fetch(FetchRequest<Town>()).first) }
        try theirs.performAndWait {
            try #require(try theirs.fetch(FetchRequest<Town>()).first).population = 20
            try theirs.save()
        }
        try mine.performAndWait {
            town.population = 30
            do {
                try mine.save()
                Issue.record("expected a version conflict")
            } catch let error as CoherenceError {
                let conflict = try #require(error.conflicts.first)
                #expect(conflict.cachedSnapshot?["population"] == .integer(10))
                #expect(conflict.cachedSnapshot?["name"] == .text("Rome"))
                #expect(conflict.objectSnapshot["population"] == .integer(30))
                #expect(conflict.persistedSnapshot?["population"] == .integer(20))
            }
        }
    }

    @Test func aChildSaveIntoASparseParentObjectKeepsTheParentsCommittedValues() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try Self.store(dir)
        let parent = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let town = try parent.performAndWait { () throws -> Town in
            let t = try #require(try parent.fetch(FetchRequest<Town>()).first)
            t.population = 11  // sparse in the parent
            return t
        }
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent)
        try child.performAndWait {
            try #require(try child.fetch(FetchRequest<Town>()).first).name = "Roma"
            try child.save()
        }
        try parent.performAndWait {
            #expect(town.name == "Roma" && town.population == 11)
            let committed = town.committedValues(forKeys: ["name", "population"])
            #expect(committed["name"] as? String == "Rome")
            #expect(committed["population"] as? Int == 10)
            #expect(town.changedValues().keys.sorted() == ["name", "population"])
            try parent.save()
            parent.reset()
            let saved = try #require(try parent.fetch(FetchRequest<Town>()).first)
            #expect(saved.name == "Roma" && saved.population == 11)
        }
    }
}
