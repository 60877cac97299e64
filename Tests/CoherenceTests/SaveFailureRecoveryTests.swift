import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// A write that spans two stores and fails leaves both files as they were, and the context can
// fix the cause and save again. Forced with a deferred foreign key another program added to
// the second store: SQLite checks it only at COMMIT, after the first store committed.

/// A record of the first store.
final class RecoveryItem: ManagedObject {
    @Attribute(.unique) var name: String = ""
    @Attribute var count: Int = 0
}

/// A record of the second store.
final class RecoveryNote: ManagedObject {
    @Attribute(.unique) var text: String = ""
}

/// Every table of a SQLite file, every row as text, read on a connection of its own.
private func tables(_ url: URL) throws -> [String: [String]] {
    let c = try SQLiteConnection(location: .file(url.path), readOnly: true, switchesToWAL: false)
    var dump: [String: [String]] = [:]
    for t in try c.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").rows({ $0.string(0) }) {
        let st = try c.prepare("SELECT * FROM \"\(t)\"")
        var rows: [String] = []
        while try st.step() { rows.append((0..<st.columnCount).map { "\(st.value($0))" }.joined(separator: "|")) }
        dump[t] = rows.sorted()
    }
    return dump
}

/// Makes `text`'s row of `RecoveryNote` in `url` impossible to delete at COMMIT time, as a
/// program could: a table with a deferred foreign key to it. Returns the undo.
private func guardNote(_ text: String, in url: URL) throws -> () throws -> Void {
    let raw = try SQLiteConnection(location: .file(url.path), switchesToWAL: false)
    try raw.execute("CREATE TABLE guard (note INTEGER REFERENCES RecoveryNote(Z_PK) DEFERRABLE INITIALLY DEFERRED)")
    try raw.execute("INSERT INTO guard SELECT Z_PK FROM RecoveryNote WHERE text = '\(text)'")
    return { try raw.execute("DELETE FROM guard") }
}

@Suite("Save failure recovery")
struct SaveFailureRecoveryTests {
    @Test func aSaveTheSecondStoreCannotCommitWritesNothingAndCanBeRetried() throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(
            types: [RecoveryItem.self, RecoveryNote.self], configurations: ["Items": ["RecoveryItem"], "Notes": ["RecoveryNote"]])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let items = dir.file("items.sqlite"), notes = dir.file("notes.sqlite")
        let history = StoreOptions(persistentHistoryTracking: true)
        try coordinator.addPersistentStore(type: .sqlite, configuration: "Items", at: items, options: history)
        try coordinator.addPersistentStore(type: .sqlite, configuration: "Notes", at: notes, options: history)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            for i in 0..<3 {
                RecoveryItem(context: context).name = "i\(i)"
                RecoveryNote(context: context).text = "n\(i)"
            }
            try context.save()
        }
        let unguard = try guardNote("n0", in: notes)
        let before = (try tables(items), try tables(notes))
        let error = context.performAndWait { () -> CoherenceError? in
            RecoveryItem(context: context).name = "new"
            let i1 = try? context.fetch(FetchRequest<RecoveryItem>(predicate: #Predicate { $0.name == "i1" })).first
            i1?.count = 7
            if let n0 = try? context.fetch(FetchRequest<RecoveryNote>(predicate: #Predicate { $0.text == "n0" })).first {
                context.delete(n0)
            }
            do throws(CoherenceError) { try context.save() } catch { return error }
            return nil
        }
        #expect(error?.code == .storeWriteFailed && error?.store == notes.path)
        // Rows, history, key counters and metadata of both files as they were.
        #expect(try tables(items) == before.0)
        #expect(try tables(notes) == before.1)

        try unguard()
        let retry = context.performAndWait { () -> CoherenceError? in
            do throws(CoherenceError) { try context.save() } catch { return error }
            return nil
        }
        #expect(retry == nil)
        let reader = ManagedObjectContext(
            concurrencyType: .privateQueue,
            coordinator: try {
                let c = PersistentStoreCoordinator(managedObjectModel: model)
                try c.addPersistentStore(type: .sqlite, configuration: "Items", at: items, options: history)
                try c.addPersistentStore(type: .sqlite, configuration: "Notes", at: notes, options: history)
                return c
            }())
        let stored = try reader.performAndWait {
            (
                try reader.fetch(FetchRequest<RecoveryItem>()).map { "\($0.name):\($0.count)" }.sorted(),
                try reader.fetch(FetchRequest<RecoveryNote>()).map(\.text).sorted()
            )
        }
        #expect(stored.0 == ["i0:0", "i1:7", "i2:0", "new:0"])
        #expect(stored.1 == ["n1", "n2"])
    }

    @Test func aBatchDeleteTheSecondStoreCannotCommitDeletesNothing() throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [RecoveryItem.self, RecoveryNote.self])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let first = dir.file("first.sqlite"), second = dir.file("second.sqlite")
        try coordinator.addPersistentStore(type: .sqlite, at: first)
        let secondStore = try coordinator.addPersistentStore(type: .sqlite, at: second)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            RecoveryNote(context: context).text = "in first"
            let other = RecoveryNote(context: context)
            other.text = "in second"
            try context.assign(other, to: secondStore)
            try context.save()
        }
        let unguard = try guardNote("in second", in: second)
        let before = (try tables(first), try tables(second))
        #expect(throws: CoherenceError.self) {
            _ = try coordinator.execute(BatchDeleteRequest(fetchRequest: FetchRequest<RecoveryNote>()))
        }
        #expect(try tables(first) == before.0)
        #expect(try tables(second) == before.1)
        try unguard()
        _ = try coordinator.execute(BatchDeleteRequest(fetchRequest: FetchRequest<RecoveryNote>()))
        #expect(try tables(first)["RecoveryNote"] == [])
        #expect(try tables(second)["RecoveryNote"] == [])
    }
}

/// Constraints the model does not know of, added to a store by another program: a save they
/// refuse throws and writes nothing (it used to return as if saved), and saves once they are gone.
@Suite("Save failure recovery: constraints from outside the model")
struct ForeignConstraintSaveTests {
    /// Makes the store of `dir` with towns old0, old1 and old2 (populations 1 to 3); its file.
    private func seedThreeTowns(_ dir: TemporaryDirectory) throws -> URL {
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try makeCoordinator(.sqlite, in: dir))
        try context.performAndWait {
            for i in 0..<3 {
                let town = Town(context: context)
                town.name = "old\(i)"
                town.population = i + 1
            }
            try context.save()
        }
        return dir.file("store.sqlite")
    }

    /// Inserts a town "new" (and a person in it) through a new coordinator into a store that
    /// `tamper` changed; then undoes the change and saves again. Returns both errors and what
    /// is stored then.
    private func insertIntoTamperedStore(
        _ tamper: String, untamper: String
    ) throws -> (error: CoherenceError?, retry: CoherenceError?, towns: [String], people: [String]) {
        let dir = try TemporaryDirectory()
        let url = try seedThreeTowns(dir)
        let raw = try SQLiteConnection(location: .file(url.path), switchesToWAL: false)
        try raw.execute(tamper)
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let before = try tables(url)
        let error = context.performAndWait { () -> CoherenceError? in
            let town = Town(context: context)
            town.name = "new"
            town.population = 1
            let ada = Person(context: context)
            ada.name = "Ada"
            ada.town = town
            do throws(CoherenceError) { try context.save() } catch { return error }
            return nil
        }
        #expect(try tables(url) == before)
        #expect(context.performAndWait { context.insertedObjects.count } == 2)
        try raw.execute(untamper)
        let retry = context.performAndWait { () -> CoherenceError? in
            do throws(CoherenceError) { try context.save() } catch { return error }
            return nil
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try reopen(coordinator))
        let (towns, people) = try reader.performAndWait {
            (try reader.fetch(FetchRequest<Town>()).map(\.name).sorted(), try reader.fetch(FetchRequest<Person>()).map(\.name))
        }
        return (error, retry, towns, people)
    }

    @Test func aUniqueIndexAddedByAnotherProgram() throws {
        let r = try insertIntoTamperedStore(
            "CREATE UNIQUE INDEX outside ON Town (population)", untamper: "DROP INDEX outside")
        #expect(r.error != nil)
        #expect(r.retry == nil)
        #expect(r.towns == ["new", "old0", "old1", "old2"] && r.people == ["Ada"])
    }

    /// A key counter another program lowered below the table's largest key is not a failure:
    /// keys are reserved past the larger of the two, so no new row takes an old row's key.
    @Test func aPrimaryKeyCounterLoweredByAnotherProgram() throws {
        let dir = try TemporaryDirectory()
        let url = try seedThreeTowns(dir)
        let raw = try SQLiteConnection(location: .file(url.path), switchesToWAL: false)
        try raw.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = 0")
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait { () throws in
            let town = Town(context: context)
            town.name = "new"
            town.population = 1
            let ada = Person(context: context)
            ada.name = "Ada"
            ada.town = town
            try context.save()
            #expect(town.objectID.primaryKey > 3)
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try reopen(coordinator))
        try reader.performAndWait { () throws in
            #expect(try reader.fetch(FetchRequest<Town>()).map(\.name).sorted() == ["new", "old0", "old1", "old2"])
            #expect(try reader.fetch(FetchRequest<Person>()).map { $0.town?.name } == ["new"])
        }
    }
}
