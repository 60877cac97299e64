import Dispatch
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Two coordinators (an app and its extension, two server processes) open the same SQLite file
/// at the same moment: each opens the one store the other made or migrated, with its UUID.
/// `SQLiteStore.openHook` stops the first opener between its look at the file and its write,
/// while the second opens the store.
@Suite("Stores: opened by two coordinators at once", .serialized, .timeLimit(.minutes(3)))
struct ConcurrentStoreOpeningTests {
    /// Opens `url` with `first` on another thread, stopped at `step` until `second` opened the
    /// same file here; returns both stores' identifiers (or the first's error).
    static func openInterleaved(
        _ url: URL, step: String, first: PersistentStoreCoordinator, second: PersistentStoreCoordinator
    ) throws -> (first: Result<UUID, CoherenceError>, second: UUID) {
        let reached = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let path = url.standardizedFileURL.path
        let stopped = LockedValue(false)
        SQLiteStore.openHook.withLock {
            $0 = { p, s in
                guard p == path, s == step,
                    !stopped.withLock({ was in
                        defer { was = true }; return was
                    })
                else { return }
                reached.signal()
                proceed.wait()
            }
        }
        defer { SQLiteStore.openHook.withLock { $0 = nil } }
        let result = LockedValue<Result<UUID, CoherenceError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            do throws(CoherenceError) {
                let store = try first.addPersistentStore(type: .sqlite, at: url)
                result.withLock { $0 = .success(store.identifier) }
            } catch {
                result.withLock { $0 = .failure(error) }
            }
            done.signal()
        }
        reached.wait()
        let other: UUID
        do {
            other = try second.addPersistentStore(type: .sqlite, at: url).identifier
        } catch {
            proceed.signal()
            done.wait()
            throw error
        }
        proceed.signal()
        done.wait()
        return (try #require(result.withLock { $0 }), other)
    }

    /// The store one coordinator made while the other was about to make it is the store both
    /// use (it was refused: "table already exists").
    @Test func aNewFileMadeByAnotherOpenerMeanwhileIsOpened() throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [Town.self, Person.self, Club.self])
        let url = dir.file("new.sqlite")
        let first = PersistentStoreCoordinator(managedObjectModel: model)
        let second = PersistentStoreCoordinator(managedObjectModel: model)
        let (opened, other) = try Self.openInterleaved(url, step: "create", first: first, second: second)
        let opener = try opened.get()
        #expect(opener == other)
        // Both write to it and read each other's rows.
        for (n, coordinator) in [first, second].enumerated() {
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait {
                Town(context: context).name = "Town \(n)"
                try context.save()
            }
        }
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: first)
        let names = try context.performAndWait { try context.fetch(FetchRequest<Town>()).map(\.name).sorted() }
        #expect(names == ["Town 0", "Town 1"])
    }

    /// A store another coordinator migrated while this one was about to migrate it is opened as
    /// it is (the second migration failed on the migrated tables).
    @Test func aStoreMigratedByAnotherOpenerMeanwhileIsOpened() throws {
        let dir = try TemporaryDirectory()
        let v1 = try ManagedObjectModel(entities: [MigrationTests.person(), MigrationTests.town()])
        // `age` renamed `years` (a type change too): the table is made again and its rows copied.
        let v2 = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Person",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    AttributeDescription(name: "years", type: .integer32, defaultValue: Int32(0), renamingIdentifier: "age"),
                    AttributeDescription(name: "nickname", type: .string, isOptional: true),
                    RelationshipDescription(name: "town", destination: "Town", inverse: "people")
                ]),
            MigrationTests.town()
        ])
        let url = dir.file("old.sqlite")
        try withMigrationStore(v1, at: url) { context in
            try insertObject(context, "Person", ["name": "Ada", "age": Int16(36)])
            try context.save()
        }
        let first = PersistentStoreCoordinator(managedObjectModel: v2)
        let second = PersistentStoreCoordinator(managedObjectModel: v2)
        let (opened, other) = try Self.openInterleaved(url, step: "migrate", first: first, second: second)
        let opener = try opened.get()
        #expect(opener == other)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: first)
        try context.performAndWait {
            let people = try fetchByName(context, "Person")
            #expect(people.map(\.nameValue) == ["Ada"])
            let years = try people.first?.value(forKey: "years") as? Int32
            #expect(years == 36)
            try people.first?.setValue(Int32(37), forKey: "years")
            try context.save()
        }
    }

    /// Without a hook: two coordinators open each of 20 new files at the same moment.
    @Test func twoCoordinatorsOpenNewFilesAtOnce() throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [Town.self, Person.self, Club.self])
        let failures = LockedValue<[String]>([])
        for round in 0..<20 {
            let url = dir.file("s\(round).sqlite")
            let ids = LockedValue<Set<UUID>>([])
            DispatchQueue.concurrentPerform(iterations: 2) { _ in
                let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
                do throws(CoherenceError) {
                    let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
                    ids.withLock { _ = $0.insert(store.identifier) }
                } catch {
                    failures.withLock { $0.append("round \(round): \(error)") }
                }
            }
            #expect(ids.withLock { $0.count } <= 1)
        }
        let reported = failures.withLock { $0 }
        #expect(reported.isEmpty, "\(reported.prefix(3))")
    }
}
