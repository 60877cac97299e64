import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// Query generations: a pinned context reads its snapshot of the stores while they move on.
@Suite struct QueryGenerationTests {
    /// A coordinator with one store of `type`, a town and three people in it.
    struct Fixture {
        let directory: TemporaryDirectory
        let coordinator: PersistentStoreCoordinator
        let people: [ObjectID]
        let town: ObjectID

        init(_ type: StoreType, name: String = #function) throws {
            directory = try TemporaryDirectory(name)
            coordinator = try makeCoordinator(type, in: directory)
            let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            (people, town) = try writer.performAndWait {
                let town = Town(context: writer)
                town.name = "Lyon"
                town.population = 500_000
                var people: [Person] = []
                for (n, name) in ["Ada", "Bob", "Cy"].enumerated() {
                    let p = Person(context: writer)
                    p.name = name
                    p.age = 30 + n
                    p.email = "\(name.lowercased())@example.com"
                    p.town = town
                    people.append(p)
                }
                try writer.save()
                return (people.map(\.objectID), town.objectID)
            }
        }

        func context(_ name: String) -> ManagedObjectContext {
            ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: name)
        }

        /// A context pinned to the current generation by a first read (a count of the people).
        func pinnedContext(_ name: String) throws -> ManagedObjectContext {
            let c = context(name)
            try c.performAndWait {
                try c.setQueryGeneration(from: .current)
                #expect(try c.count(for: FetchRequest<Person>()) == 3)
            }
            return c
        }

        /// Gives the coordinator's generations a clock the test moves (no waiting), and an idle
        /// timeout of 60 s; returns the clock's time in nanoseconds.
        func movableClock() -> LockedValue<UInt64> {
            let now = LockedValue<UInt64>(1_000_000_000)
            coordinator.queryGenerations.clock.withLock { $0.now = { now.withLock { $0 } } }
            coordinator.queryGenerationIdleTimeout = 60
            return now
        }

        /// Deletes a person and renames the town in another context, and saves; returns the save's notification.
        @discardableResult
        func deleteElsewhere(_ id: ObjectID, renameTownTo newName: String = "Paris") throws -> Notification {
            let background = context("background")
            let recorder = SaveRecorder(background)
            try background.performAndWait {
                background.delete(background.object(with: id))
                let town = try #require(background.existingObject(with: town) as? Town)
                town.name = newName
                try background.save()
            }
            return try #require(recorder.last)
        }

        /// Inserts a person in another context and saves; returns the save's notification.
        @discardableResult
        func insertElsewhere(_ name: String) throws -> Notification {
            let background = context("inserter")
            let recorder = SaveRecorder(background)
            try background.performAndWait {
                let p = Person(context: background)
                p.name = name
                try background.save()
            }
            return try #require(recorder.last)
        }
    }

    /// Records a context's did-save notifications.
    final class SaveRecorder: @unchecked Sendable {
        private let saved = LockedValue<[Notification]>([])
        private var token: (any NSObjectProtocol)?
        init(_ context: ManagedObjectContext) {
            let saved = self.saved
            token = NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveNotification, object: context, queue: nil) {
                note in saved.withLock { $0.append(note) }
            }
        }
        deinit { if let token { NotificationCenter.default.removeObserver(token) } }
        var last: Notification? { saved.withLock { $0.last } }
    }

    static func peopleCount(_ context: ManagedObjectContext) throws -> Int {
        try context.performAndWait { try context.count(for: FetchRequest<Person>()) }
    }

    // MARK: The tapped row

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func tappedRowStillReadsEverythingUntilAdvanced(_ type: StoreType) throws {
        let f = try Fixture(type)
        let view = f.context("view")
        let ada = f.people[0]
        try view.performAndWait {
            try view.setQueryGeneration(from: .current)
            #expect(view.queryGenerationToken == .current)
            // The list; then its objects become faults again (as memory pressure or a refresh
            // would make them), so the detail below reads their rows from the store.
            let list = try view.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\Person.name)]))
            #expect(list.map(\.objectID) == f.people)
            #expect(view.queryGenerationToken != nil && view.queryGenerationToken != .current)
            for person in list { view.refresh(person, mergeChanges: false) }
            #expect(list[0].isFault)
        }
        try f.deleteElsewhere(ada)
        try view.performAndWait {
            // The detail view: every attribute and the to-one relationship, read now.
            let person = try #require(view.registeredObject(for: ada) as? Person)
            #expect(person.isFault)
            #expect(try view.existingObject(with: ada) === person)
            #expect(person.name == "Ada")
            #expect(person.age == 30)
            #expect(person.email == "ada@example.com")
            #expect(person.town?.name == "Lyon")
            #expect(person.town?.population == 500_000)
            #expect(try view.count(for: FetchRequest<Person>()) == 3)
            #expect(try view.fetch(FetchRequest<Town>(predicate: #Predicate { $0.name == "Lyon" })).count == 1)
            #expect(person.town?.people.count == 3)
        }
        // Unpinned, the same reads see the delete.
        let fresh = f.context("fresh")
        try fresh.performAndWait { () throws in
            #expect(throws: CoherenceError.self) { try fresh.existingObject(with: ada) }
            #expect(try fresh.count(for: FetchRequest<Person>()) == 2)
        }
        // Advancing drops it.
        try view.performAndWait {
            try view.setQueryGeneration(from: .current)
            view.reset()
            #expect(throws: CoherenceError.self) { try view.existingObject(with: ada) }
            #expect(try view.count(for: FetchRequest<Person>()) == 2)
            let town = try #require(view.existingObject(with: f.town) as? Town)
            #expect(town.name == "Paris")
        }
    }

    // MARK: Advancing

    enum Advance: String, CaseIterable, CustomTestStringConvertible {
        case save, mergeDidSave, mergeRemote, reset, automaticMerge, refreshAll
        var testDescription: String { rawValue }
    }

    @Test(arguments: Advance.allCases)
    func eachAdvancingCallMovesToTheCurrentGeneration(_ advance: Advance) throws {
        let f = try Fixture(.sqlite)
        let view = f.context("view")
        let pinned = try view.performAndWait { () throws -> QueryGenerationToken? in
            try view.setQueryGeneration(from: .current)
            #expect(try view.count(for: FetchRequest<Person>()) == 3)
            return view.queryGenerationToken
        }
        if advance == .automaticMerge { view.automaticallyMergesChangesFromParent = true }
        let note = try f.insertElsewhere("Dee")
        try view.performAndWait {
            if advance != .automaticMerge {
                // Still the snapshot.
                #expect(try view.count(for: FetchRequest<Person>()) == 3)
                #expect(view.queryGenerationToken == pinned)
            }
            switch advance {
            case .save:
                let ada = try #require(view.existingObject(with: f.people[0]) as? Person)
                ada.age = 99
                try view.save()
            case .mergeDidSave:
                view.mergeChanges(fromContextDidSave: note)
            case .mergeRemote:
                ManagedObjectContext.mergeChanges(
                    fromRemoteContextSave: [
                        ManagedObjectContext.NotificationKey.insertedObjectIDs: note.userInfo?[
                            ManagedObjectContext.NotificationKey.insertedObjectIDs] ?? []
                    ],
                    into: [view])
            case .reset:
                view.reset()
            case .refreshAll:
                view.refreshAllObjects()
            case .automaticMerge:
                break  // merged by the notification, on the context's queue, before this block
            }
            // Pinned again at the next read, to the state now.
            #expect(view.queryGenerationToken == .current)
            #expect(try view.count(for: FetchRequest<Person>()) == 4)
            #expect(view.queryGenerationToken != pinned && view.queryGenerationToken != .current)
        }
        // The old snapshot was released with its last holder.
        #expect(f.coordinator.queryGenerations.liveCount == 1)
    }

    /// Refreshing all objects moves a context pinned with `.current` (as a save does) and
    /// re-reads its objects at the new generation; a context pinned to another context's token
    /// keeps its snapshot (as Core Data's "refresh-all for a context pinned to current").
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func refreshingAllObjectsMovesOnlyAContextPinnedToCurrent(_ type: StoreType) throws {
        let f = try Fixture(type)
        let view = f.context("view"), follower = f.context("follower")
        let token = try view.performAndWait { () throws -> QueryGenerationToken? in
            try view.setQueryGeneration(from: .current)
            let town = try #require(view.existingObject(with: f.town) as? Town)
            #expect(town.name == "Lyon")
            return view.queryGenerationToken
        }
        try follower.performAndWait {
            try follower.setQueryGeneration(from: token)
            let town = try #require(follower.existingObject(with: f.town) as? Town)
            #expect(town.name == "Lyon")
        }
        try f.deleteElsewhere(f.people[0])
        try follower.performAndWait {
            follower.refreshAllObjects()
            #expect(follower.queryGenerationToken == token)
            let town = try #require(follower.existingObject(with: f.town) as? Town)
            #expect(town.name == "Lyon")
            #expect(try follower.count(for: FetchRequest<Person>()) == 3)
        }
        try view.performAndWait {
            let town = try #require(view.registeredObject(for: f.town) as? Town)
            let ada = try #require(view.existingObject(with: f.people[0]) as? Person)
            #expect(town.name == "Lyon")
            #expect(ada.name == "Ada")
            town.population = 1  // an unsaved change survives the refresh
            view.refreshAllObjects()  // the changed town is read again at once: a new generation
            #expect(view.queryGenerationToken != token)
            #expect(town.name == "Paris")
            #expect(town.population == 1)
            #expect(ada.isFault)
            #expect(throws: CoherenceError.self) { try view.existingObject(with: f.people[0]) }
            #expect(try view.count(for: FetchRequest<Person>()) == 2)
            #expect(view.queryGenerationToken != token && view.queryGenerationToken != .current)
        }
    }

    // MARK: Sharing, unpinning, errors

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func twoContextsShareOneToken(_ type: StoreType) throws {
        let f = try Fixture(type)
        let a = f.context("a"), b = f.context("b")
        let token = try a.performAndWait { () throws -> QueryGenerationToken? in
            try a.setQueryGeneration(from: .current)
            _ = try a.count(for: FetchRequest<Person>())
            return a.queryGenerationToken
        }
        try b.performAndWait { try b.setQueryGeneration(from: token) }
        #expect(b.queryGenerationToken == token)
        try f.deleteElsewhere(f.people[1])
        #expect(try Self.peopleCount(a) == 3)
        #expect(try Self.peopleCount(b) == 3)
        // One holder letting go keeps the snapshot for the other.
        try a.performAndWait { try a.setQueryGeneration(from: nil) }
        #expect(try Self.peopleCount(a) == 2)
        #expect(try Self.peopleCount(b) == 3)
        try b.performAndWait {
            let bob = try #require(b.existingObject(with: f.people[1]) as? Person)
            #expect(bob.name == "Bob")
        }
        #expect(f.coordinator.queryGenerations.liveCount == 1)
        // The last one releases it: its token is no good any more.
        try b.performAndWait { try b.setQueryGeneration(from: nil) }
        #expect(b.queryGenerationToken == nil)
        #expect(f.coordinator.queryGenerations.liveCount == 0)
        let c = f.context("c")
        c.performAndWait {
            do throws(CoherenceError) {
                try c.setQueryGeneration(from: token)
            } catch {
                #expect(error.code == .invalidQueryGenerationToken)
            }
            #expect(c.queryGenerationToken == nil)
        }
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func unpinningReadsTheStoresAsTheyAreNow(_ type: StoreType) throws {
        let f = try Fixture(type)
        let view = try f.pinnedContext("view")
        try f.insertElsewhere("Dee")
        #expect(try Self.peopleCount(view) == 3)
        try view.performAndWait {
            try view.setQueryGeneration(from: nil)
            #expect(view.queryGenerationToken == nil)
            #expect(try view.count(for: FetchRequest<Person>()) == 4)
        }
        #expect(f.coordinator.queryGenerations.liveCount == 0)
    }

    @Test func contextGoingAwayReleasesItsSnapshot() throws {
        let f = try Fixture(.sqlite)
        do {
            let view = f.context("view")
            try view.performAndWait {
                try view.setQueryGeneration(from: .current)
                _ = try view.count(for: FetchRequest<Person>())
            }
            #expect(f.coordinator.queryGenerations.liveCount == 1)
        }
        #expect(f.coordinator.queryGenerations.liveCount == 0)
    }

    @Test func storeWithoutWriteAheadLogCannotHoldAGeneration() throws {
        let dir = try TemporaryDirectory()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        var options = StoreOptions()
        options.writeAheadLog = false
        let url = dir.file("rollback.sqlite")
        try coordinator.addPersistentStore(type: .sqlite, at: url, options: options)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let p = Person(context: context)
            p.name = "Ada"
            try context.save()
            do throws(CoherenceError) {
                try context.setQueryGeneration(from: .current)
                Issue.record("pinned a store without WAL")
            } catch {
                #expect(error.code == .queryGenerationsUnsupported)
                #expect(error.store == url.standardizedFileURL.path)
            }
            #expect(context.queryGenerationToken == nil)
            #expect(try context.count(for: FetchRequest<Person>()) == 1)
        }
    }

    @Test func tokenOfAnotherCoordinatorIsRefused() throws {
        let one = try Fixture(.inMemory), other = try Fixture(.inMemory)
        let a = one.context("a")
        let token = try a.performAndWait { () throws -> QueryGenerationToken? in
            try a.setQueryGeneration(from: .current)
            _ = try a.count(for: FetchRequest<Person>())
            return a.queryGenerationToken
        }
        let b = other.context("b")
        b.performAndWait {
            do throws(CoherenceError) {
                try b.setQueryGeneration(from: token)
                Issue.record("accepted another coordinator's token")
            } catch {
                #expect(error.code == .invalidQueryGenerationToken)
            }
            #expect(b.queryGenerationToken == nil)
        }
    }

    // MARK: Nested contexts

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func childContextsReadThroughTheirParentsGeneration(_ type: StoreType) throws {
        let f = try Fixture(type)
        let parent = f.context("parent")
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child")
        try parent.performAndWait {
            try parent.setQueryGeneration(from: .current)
            _ = try parent.count(for: FetchRequest<Person>())
        }
        #expect(child.queryGenerationToken == parent.queryGenerationToken)
        try f.deleteElsewhere(f.people[2])
        try child.performAndWait {
            #expect(try child.count(for: FetchRequest<Person>()) == 3)
            let cy = try #require(child.existingObject(with: f.people[2]) as? Person)
            #expect(cy.name == "Cy")
            #expect(cy.town?.name == "Lyon")
            do throws(CoherenceError) {
                try child.setQueryGeneration(from: .current)
                Issue.record("a child context was pinned")
            } catch {
                #expect(error.code == .invalidRequest)
            }
        }
    }
}

/// A second process deletes the row a pinned context shows.
@Suite(.serialized) struct QueryGenerationProcessTests {
    @Test func aPinnedContextStillReadsARowAnotherProcessDeleted() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("notes.sqlite")
        let coordinator = try remoteCoordinator(url)
        try insertNote(coordinator, author: "parent", sequence: 1)
        try insertNote(coordinator, author: "parent", sequence: 2)
        let view = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "view")
        let id = try view.performAndWait { () throws -> ObjectID in
            try view.setQueryGeneration(from: .current)
            let notes = try view.fetch(FetchRequest<RemoteNote>(sortBy: [SortDescriptor(\RemoteNote.sequence)]))
            #expect(notes.count == 2)
            for note in notes { view.refresh(note, mergeChanges: false) }
            return try #require(notes.first).objectID
        }
        let child = try WriterProcess(store: url, author: "child", ["--delete-sequence", "1"])
        #expect(await child.waitForLine("DONE"))
        #expect(await child.finish().status == 0)
        // Another context sees the delete…
        #expect(try noteCount(coordinator) == 1)
        // …the pinned one does not.
        try view.performAndWait { () throws in
            let note = try #require(view.registeredObject(for: id) as? RemoteNote)
            #expect(note.isFault)
            #expect(note.text == "parent 1")
            #expect(note.sequence == 1)
            #expect(try view.count(for: FetchRequest<RemoteNote>()) == 2)
            // Advancing drops it.
            try view.setQueryGeneration(from: .current)
            view.reset()
            #expect(try view.count(for: FetchRequest<RemoteNote>()) == 1)
            #expect(throws: CoherenceError.self) { try view.existingObject(with: id) }
        }
    }
}
