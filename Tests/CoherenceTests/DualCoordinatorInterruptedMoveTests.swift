import Foundation
import Testing
@testable import Coherence
@testable import CoherenceContext
@testable import CoherenceStore

/// A dual-coordinator container's store move (`init(…migratingFrom:to:…)`) interrupted between
/// the store's files, as a crash or a killed process leaves them: the next launch must open the
/// store with everything it held — the saves still in its write-ahead log included.
@Suite struct DualCoordinatorInterruptedMoveTests {
    /// The store's files as a program that crashed with the store open leaves them: two people
    /// saved, still in the write-ahead log (not checkpointed into the main file).
    private static func crashedStoreFiles(in dir: TemporaryDirectory) throws -> [String: Data] {
        let url = dir.file("live/people.sqlite")
        let container = try DualCoordinatorContainer(managedObjectModel: try makeTestModel(), storeURL: url)
        try savePeople(["Ann", "Bob"], in: container.importerContext())
        var files: [String: Data] = [:]
        for suffix in ["", "-wal", "-shm"] {
            files[suffix] = try Data(contentsOf: URL(fileURLWithPath: url.path + suffix))
        }
        #expect(files["-wal"]?.isEmpty == false)
        return files
    }

    private static func write(_ files: [String: Data], _ suffixes: [String], at url: URL) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        for suffix in suffixes { try #require(files[suffix]).write(to: URL(fileURLWithPath: url.path + suffix)) }
    }

    private static func people(_ container: DualCoordinatorContainer) throws -> [String] {
        let context = container.temporaryContext()
        return try context.performAndWait { try context.fetch(FetchRequest<Person>()).map(\.name).sorted() }
    }

    /// The main file was moved, its `-wal` and `-shm` were not: the move goes on with them.
    @Test func aMoveStoppedAfterTheMainFileBringsTheLogAlong() throws {
        let dir = try TemporaryDirectory()
        let files = try Self.crashedStoreFiles(in: dir)
        let old = dir.file("old/people.sqlite"), new = dir.file("shared/people.sqlite")
        try Self.write(files, ["-wal", "-shm"], at: old)
        try Self.write(files, [""], at: new)
        let container = try DualCoordinatorContainer(managedObjectModel: try makeTestModel(), migratingFrom: old, to: new)
        #expect(try Self.people(container) == ["Ann", "Bob"])
        for suffix in ["", "-wal", "-shm"] { #expect(!FileManager.default.fileExists(atPath: old.path + suffix)) }
    }

    /// The main file and its `-wal` were moved, the `-shm` was not: the store opens whole and
    /// the old `-shm` goes.
    @Test func aMoveStoppedBeforeTheSharedMemoryFileOpensTheStoreWhole() throws {
        let dir = try TemporaryDirectory()
        let files = try Self.crashedStoreFiles(in: dir)
        let old = dir.file("old/people.sqlite"), new = dir.file("shared/people.sqlite")
        try Self.write(files, ["-shm"], at: old)
        try Self.write(files, ["", "-wal"], at: new)
        let container = try DualCoordinatorContainer(managedObjectModel: try makeTestModel(), migratingFrom: old, to: new)
        #expect(try Self.people(container) == ["Ann", "Bob"])
        for suffix in ["", "-wal", "-shm"] { #expect(!FileManager.default.fileExists(atPath: old.path + suffix)) }
    }

    /// The move's first step moved the `-wal` (the move now starts with it) and stopped: the
    /// main file is still at the old location, and the move finishes.
    @Test func aMoveStoppedAfterTheLogFinishes() throws {
        let dir = try TemporaryDirectory()
        let files = try Self.crashedStoreFiles(in: dir)
        let old = dir.file("old/people.sqlite"), new = dir.file("shared/people.sqlite")
        try Self.write(files, ["", "-shm"], at: old)
        try Self.write(files, ["-wal"], at: new)
        let container = try DualCoordinatorContainer(managedObjectModel: try makeTestModel(), migratingFrom: old, to: new)
        #expect(try Self.people(container) == ["Ann", "Bob"])
        for suffix in ["", "-wal", "-shm"] { #expect(!FileManager.default.fileExists(atPath: old.path + suffix)) }
    }

    /// A whole move of a store a crash left with its log: everything arrives.
    @Test func aWholeMoveOfACrashedStoreKeepsItsLog() throws {
        let dir = try TemporaryDirectory()
        let files = try Self.crashedStoreFiles(in: dir)
        let old = dir.file("old/people.sqlite"), new = dir.file("shared/people.sqlite")
        try Self.write(files, ["", "-wal", "-shm"], at: old)
        let container = try DualCoordinatorContainer(managedObjectModel: try makeTestModel(), migratingFrom: old, to: new)
        #expect(try Self.people(container) == ["Ann", "Bob"])
    }
}
