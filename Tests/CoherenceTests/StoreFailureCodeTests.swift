import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Reads and writes of an attached store that the database refuses get their own codes
/// (`.storeReadFailed`, `.storeWriteFailed`), with the store and the SQL that failed;
/// `.storeOpenFailed` is for opening only.
@Suite("Store read and write failure codes")
struct StoreFailureCodeTests {
    static func notesModel() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(name: "Note", properties: [AttributeDescription(name: "text", type: .string, defaultValue: "")])
        ])
    }

    /// A coordinator with a SQLite store at `dir/notes.sqlite` holding one saved note.
    static func storeWithOneNote(_ dir: TemporaryDirectory) throws -> (PersistentStoreCoordinator, URL, ObjectID) {
        let url = dir.file("notes.sqlite")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try notesModel())
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let id: ObjectID = try context.performAndWait {
            let note = try context.insertNewObject(forEntityName: "Note")
            try note.setValue("first", forKey: "text")
            try context.save()
            return note.objectID
        }
        return (coordinator, url, id)
    }

    /// Changes the store's schema through a second connection, as another program could.
    static func alter(_ url: URL, _ sql: String) throws {
        let other = try SQLiteConnection(location: .file(url.path))
        try other.execute(sql)
    }

    static func sqliteErrors(_ error: CoherenceError?) -> [SQLiteError] {
        (error?.underlyingErrors ?? []).compactMap { $0 as? SQLiteError }
    }

    @Test func aReadOfADroppedTableGivesTheReadCodeWithTheSQLAndStore() throws {
        let dir = try TemporaryDirectory()
        let (coordinator, url, id) = try Self.storeWithOneNote(dir)
        try Self.alter(url, "DROP TABLE Note")
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        context.performAndWait {
            let fetch = #expect(throws: CoherenceError.self) { try context.fetch(FetchRequest<ManagedObject>(entityName: "Note")) }
            #expect(fetch?.code == .storeReadFailed, "\(String(describing: fetch))")
            #expect(fetch?.store == url.path)
            #expect(fetch?.sql?.contains("Note") == true, "\(String(describing: fetch?.sql))")
            #expect(Self.sqliteErrors(fetch).first?.message?.contains("no such table") == true, "\(String(describing: fetch))")

            let count = #expect(throws: CoherenceError.self) { try context.count(for: FetchRequest<ManagedObject>(entityName: "Note")) }
            #expect(count?.code == .storeReadFailed)
            #expect(count?.store == url.path)
            #expect(count?.sql != nil)

            let fault = #expect(throws: CoherenceError.self) { try context.existingObject(with: id) }
            #expect(fault?.code == .storeReadFailed)
            #expect(fault?.objectID == id)
            #expect(fault?.store == url.path)
            #expect(fault?.sql != nil)
        }
    }

    @Test func aSaveATriggerRefusesGivesTheWriteCodeAndWritesNothing() throws {
        let dir = try TemporaryDirectory()
        let (coordinator, url, id) = try Self.storeWithOneNote(dir)
        try Self.alter(url, "CREATE TRIGGER refuse BEFORE INSERT ON Note BEGIN SELECT RAISE(ABORT, 'notes are closed'); END")
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            // An update (written first) and an insert (refused): neither stays.
            try context.existingObject(with: id).setValue("changed", forKey: "text")
            try context.insertNewObject(forEntityName: "Note").setValue("second", forKey: "text")
            let error = #expect(throws: CoherenceError.self) { try context.save() }
            #expect(error?.code == .storeWriteFailed, "\(String(describing: error))")
            #expect(error?.store == url.path)
            #expect(error?.sql?.hasPrefix("INSERT") == true, "\(String(describing: error?.sql))")
            let sqlite = Self.sqliteErrors(error).first
            #expect(sqlite?.resultCode == SQLiteError.constraint)
            #expect(sqlite?.message?.contains("notes are closed") == true)
        }
        let reader = PersistentStoreCoordinator(managedObjectModel: coordinator.managedObjectModel)
        try reader.addPersistentStore(type: .sqlite, at: url)
        let rows = try reader.fetchRows(StoreFetch(entity: try #require(reader.managedObjectModel.entitiesByName["Note"])))
        #expect(rows.map { named($0.row)["text"] } == [.text("first")])
    }

    @Test func reservingKeysATriggerRefusesGivesTheWriteCode() throws {
        let dir = try TemporaryDirectory()
        let (coordinator, url, _) = try Self.storeWithOneNote(dir)
        try Self.alter(url, "CREATE TRIGGER nokeys BEFORE UPDATE ON Z_PRIMARYKEY BEGIN SELECT RAISE(ABORT, 'no more keys'); END")
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        context.performAndWait {
            let note = try? context.insertNewObject(forEntityName: "Note")
            let error = #expect(throws: CoherenceError.self) { try context.obtainPermanentIDs(for: note.map { [$0] } ?? []) }
            #expect(error?.code == .storeWriteFailed, "\(String(describing: error))")
            #expect(error?.store == url.path)
            #expect(error?.sql?.contains("Z_PRIMARYKEY") == true)
            #expect(note?.objectID.isTemporaryID == true)
        }
    }
}
