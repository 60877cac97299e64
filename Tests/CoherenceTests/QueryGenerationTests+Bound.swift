import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// What a pinned generation costs, and the rule that bounds it.
extension QueryGenerationTests {
    enum Release: String, CaseIterable, CustomTestStringConvertible {
        case unpin, advance, idleTimeout
        var testDescription: String { rawValue }
    }

    /// Saves `count` times, each save inserting 16 samples of 8 KB.
    static func writeSamples(_ context: ManagedObjectContext, saves count: Int) throws {
        try context.performAndWait {
            for _ in 0..<count {
                for _ in 0..<16 {
                    let s = Sample(context: context)
                    s.data = Data(repeating: UInt8.random(in: 0...255), count: 8 * 1024)
                }
                try context.save()
                context.reset()
            }
        }
    }

    static func walSize(_ url: URL) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: url.path + "-wal"))?[.size] as? NSNumber)?.intValue ?? 0
    }

    @Test(arguments: Release.allCases)
    func theWriteAheadLogStopsGrowingOnceThePinIsReleased(_ release: Release) throws {
        let f = try Fixture(.sqlite)
        let url = f.directory.file("store.sqlite")
        let now = f.movableClock()
        let view = try f.pinnedContext("view")
        let writer = f.context("writer")
        // 40 saves of 128 KB: past the 1000-page automatic checkpoint, which cannot restart the
        // log while the snapshot holds it.
        try Self.writeSamples(writer, saves: 40)
        let pinnedSize = Self.walSize(url)
        #expect(pinnedSize > 5_000_000)
        try Self.writeSamples(writer, saves: 20)
        #expect(Self.walSize(url) > pinnedSize + 2_000_000, "the log grows while the snapshot is held")
        #expect(try Self.peopleCount(view) == 3)

        switch release {
        case .unpin:
            try view.performAndWait { try view.setQueryGeneration(from: nil) }
        case .advance:
            view.performAndWait { view.reset() }
        case .idleTimeout:
            now.withLock { $0 += 61_000_000_000 }
        }
        // The first commit after the release lets the checkpoint finish (and, for an idle
        // snapshot, releases it); from then on the log is reused from its start.
        try Self.writeSamples(writer, saves: 1)
        #expect(f.coordinator.queryGenerations.liveCount == 0)
        let releasedSize = Self.walSize(url)
        try Self.writeSamples(writer, saves: 80)
        #expect(Self.walSize(url) <= releasedSize + 300_000, "10 MB more were written; the log stayed the size it had")

        if release == .idleTimeout {
            // The context moved to the current generation at its next read.
            try view.performAndWait { () throws in
                #expect(try view.count(for: FetchRequest<Sample>()) == 141 * 16)
                #expect(view.queryGenerationToken != .current && view.queryGenerationToken != nil)
            }
        }
    }

    @Test func aGenerationInUseIsNotReleasedForBeingIdle() throws {
        let f = try Fixture(.inMemory)
        let now = f.movableClock()
        let view = try f.pinnedContext("view")
        for _ in 0..<3 {
            now.withLock { $0 += 50_000_000_000 }
            #expect(try Self.peopleCount(view) == 3)  // a read within the timeout
            try f.insertElsewhere("Dee")
        }
        #expect(f.coordinator.queryGenerations.liveCount == 1)
        #expect(try Self.peopleCount(view) == 3)
    }
}

extension QueryGenerationTests {
    /// A commit goes through while a pinned read is in the middle of its statement (on the
    /// snapshot's connection), and the read goes on seeing its snapshot.
    @Test func readersNeverBlockTheWriter() throws {
        let f = try Fixture(.sqlite)
        let generation = try f.coordinator.pinQueryGeneration()
        defer { f.coordinator.queryGenerations.release(generation) }
        let person = try #require(f.coordinator.managedObjectModel.entitiesByName["Person"])
        var fetch = StoreFetch(entity: person)
        fetch.generation = generation
        let store = try #require(f.coordinator.persistentStores.first)
        var names: [StoredValue] = []
        var committed: Result<[ObjectID], any Error>?
        try store.engine.fetch(fetch, expecting: { _ in }) { _, _, values in
            // The writer commits between two rows of the pinned read.
            if committed == nil {
                committed = Result { try insertObjects(f.coordinator, [rowInsert(person, ["name": .text("Dee")])]) }
            }
            names.append(values[person.propertiesByName["name"]?.slot ?? 0])
        }
        #expect(try committed?.get().count == 1)
        #expect(names.count == 3)
        #expect(try f.coordinator.count(StoreFetch(entity: person)) == 4)
        #expect(try f.coordinator.count(fetch) == 3)
    }
}

extension QueryGenerationTests {
    /// One generation covers every store of the coordinator: a SQLite and an in-memory store
    /// holding the same entity.
    @Test func aGenerationCoversEveryStore() throws {
        let dir = try TemporaryDirectory()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        let disk = try coordinator.addPersistentStore(type: .sqlite, at: dir.file("disk.sqlite"))
        let memory = try coordinator.addPersistentStore(type: .inMemory)
        func insert(_ name: String, into store: PersistentStore) throws {
            let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try writer.performAndWait {
                let p = Person(context: writer)
                p.name = name
                try writer.assign(p, to: store)
                try writer.save()
            }
        }
        try insert("Ada", into: disk)
        try insert("Bob", into: memory)
        let view = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "view")
        try view.performAndWait {
            try view.setQueryGeneration(from: .current)
            #expect(try view.count(for: FetchRequest<Person>()) == 2)
        }
        try insert("Cy", into: disk)
        try insert("Dee", into: memory)
        try view.performAndWait { () throws in
            #expect(try view.count(for: FetchRequest<Person>()) == 2)
            #expect(try view.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\Person.name)])).map(\.name) == ["Ada", "Bob"])
            view.reset()
            #expect(try view.count(for: FetchRequest<Person>()) == 4)
        }
    }
}
