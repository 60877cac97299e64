import CCoherenceSQLite
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Runs SQL on a database file with SQLite's C API alone, in the journal mode the file has (a
/// `SQLiteConnection` would switch it to WAL), as another program would.
/// With `keepingWAL`, closing leaves the write-ahead log as it is, not checkpointed (as a
/// program that crashed would).
func runForeignSQL(_ sql: String, at path: String, keepingWAL: Bool = false) throws {
    var db: OpaquePointer?
    guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK, let db else {
        throw SQLiteError(extendedResultCode: SQLITE_CANTOPEN, message: "cannot open \(path)")
    }
    defer { sqlite3_close_v2(db) }
    if keepingWAL {
        var set: Int32 = 0
        _ = coherence_sqlite3_db_config_int(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, &set)
    }
    let rc = sqlite3_exec(db, sql, nil, nil, nil)
    guard rc == SQLITE_OK else { throw SQLiteError(extendedResultCode: rc, message: String(cString: sqlite3_errmsg(db)), sql: sql) }
}

@Suite("Opening a store changes nothing it refuses")
struct StoreOpeningTests {
    /// Bytes 18 and 19 of a database header: 1 1 in rollback-journal mode, 2 2 in WAL mode.
    static func journalVersions(_ bytes: Data) -> [UInt8] { Array(bytes[18...19]) }

    /// Tries to add a store at `url` with `model`, expecting `.storeIncompatible`; returns the
    /// file's bytes from before and after.
    static func refuse(_ url: URL, model: ManagedObjectModel) throws -> (before: Data, after: Data) {
        let before = try Data(contentsOf: url)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        do {
            try coordinator.addPersistentStore(type: .sqlite, at: url)
            Issue.record("the store at \(url.lastPathComponent) was accepted")
        } catch {
            #expect(error.code == .storeIncompatible, "\(error)")
        }
        return (before, try Data(contentsOf: url))
    }

    /// Another program's SQLite file, in rollback-journal mode, is refused and left as it was:
    /// not switched to WAL, no companion files left behind.
    @Test func aForeignDatabaseIsLeftByteForByte() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("foreign.sqlite")
        try runForeignSQL(
            "PRAGMA journal_mode=DELETE; CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('keep me')",
            at: url.path)
        let (before, after) = try Self.refuse(url, model: try makeTestModel())
        #expect(Self.journalVersions(before) == [1, 1])
        #expect(Self.journalVersions(after) == [1, 1], "the file was switched to WAL")
        #expect(before == after, "the file changed")
        for suffix in ["-wal", "-shm", "-journal"] {
            #expect(!FileManager.default.fileExists(atPath: url.path + suffix), "\(suffix) left behind")
        }
    }

    /// A foreign database in WAL mode whose log still holds transactions (its program crashed)
    /// is refused without checkpointing the log into it: the file and its log are left as they were.
    @Test func aForeignDatabaseKeepsItsLog() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("crashed.sqlite")
        try runForeignSQL(
            "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('in the log')",
            at: url.path, keepingWAL: true)
        let wal = URL(fileURLWithPath: url.path + "-wal")
        let walBefore = try Data(contentsOf: wal)
        #expect(!walBefore.isEmpty)
        let (before, after) = try Self.refuse(url, model: try makeTestModel())
        #expect(before == after, "the log was checkpointed into the file")
        #expect(try Data(contentsOf: wal) == walBefore)
    }

    /// A Coherence store made for another model is refused and left as it was, whether it is in
    /// WAL mode (as Coherence leaves it) or was put back in rollback-journal mode (by a backup
    /// tool, say).
    @Test(arguments: ["WAL", "DELETE"])
    func anIncompatibleStoreIsLeftByteForByte(_ journalMode: String) throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("readings.sqlite")
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeReadingModel())
            let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
            let entity = try #require(coordinator.managedObjectModel.entity(for: Reading.self))
            try insertObjects(coordinator, [rowInsert(entity, ["label": .text("one"), "value": 1.5.storedValue])])
            try coordinator.remove(store)
        }
        try runForeignSQL("PRAGMA journal_mode=\(journalMode)", at: url.path)
        let (before, after) = try Self.refuse(url, model: try makeTestModel())
        #expect(Self.journalVersions(before) == (journalMode == "WAL" ? [2, 2] : [1, 1]))
        #expect(before == after, "the file changed")
        // It still opens with its own model, and is in WAL mode from then on.
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeReadingModel())
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        #expect(try coordinator.count(for: FetchRequest<Reading>()) == 1)
        #expect(Self.journalVersions(try Data(contentsOf: url)) == [2, 2])
    }

    /// An empty file (as `touch` makes) and a missing one become new stores in WAL mode.
    @Test(arguments: [true, false])
    func anEmptyOrMissingFileBecomesAStore(_ exists: Bool) throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("new.sqlite")
        if exists { #expect(FileManager.default.createFile(atPath: url.path, contents: Data())) }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let town = try #require(coordinator.managedObjectModel.entity(for: Town.self))
        try insertObjects(coordinator, [rowInsert(town, ["name": .text("Oslo")])])
        #expect(try coordinator.count(for: FetchRequest<Town>()) == 1)
        #expect(Self.journalVersions(try Data(contentsOf: url)) == [2, 2])
    }

    /// `overwriteIncompatibleStore` still replaces a foreign file.
    @Test func overwriteIncompatibleStoreStillReplacesIt() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("Notes.sqlite")
        try runForeignSQL("PRAGMA journal_mode=DELETE; CREATE TABLE notes (id INTEGER PRIMARY KEY)", at: url.path)
        let container = GenericConnect<ContextStrategy.Mixed>(name: "Notes", managedObjectModel: try makeTestModel())
        try container.attachPersistentStore(at: dir.url, for: StoreConfiguration(overwriteIncompatibleStore: true))
        #expect(Self.journalVersions(try Data(contentsOf: url)) == [2, 2])
        #expect(try container.persistentStoreCoordinator.count(for: FetchRequest<Town>()) == 0)
    }
}
