import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// Behaviour of containers and connects: bad inputs, incompatible stores, several stores,
// the lifecycle, the four context strategies, and transformable attributes.

// MARK: Helpers

private func townModel() throws -> ManagedObjectModel { try ManagedObjectModel(types: [Town.self, Person.self, Club.self]) }

/// The files under `directory` this process holds open (read from /proc/self/fd).
private func openFiles(under directory: URL) -> [String] {
    let fdDirectory = "/proc/self/fd"
    let prefix = directory.resolvingSymlinksInPath().path + "/"
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: fdDirectory)) ?? []
    return entries.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: fdDirectory + "/" + $0) }
        .filter { $0.hasPrefix(prefix) }
}

private func exists(_ url: URL) -> Bool { FileManager.default.fileExists(atPath: url.path) }

private func permissions(_ url: URL) -> Int? {
    (try? FileManager.default.attributesOfItem(atPath: url.path))?[.posixPermissions] as? Int
}

private func inode(_ url: URL) -> UInt64? {
    ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.systemFileNumber] as? NSNumber)?.uint64Value
}

private func companion(_ url: URL, _ suffix: String) -> URL { URL(fileURLWithPath: url.path + suffix) }

/// Expects `body` to throw a CoherenceError with `code` whose `store` is `store` and whose
/// description names it.
private func expectError(
    _ code: CoherenceError.Code, store: String, mentioning text: String? = nil,
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) {
    let error = #expect(throws: CoherenceError.self, sourceLocation: sourceLocation) { try body() }
    #expect(error?.code == code, sourceLocation: sourceLocation)
    #expect(error?.store == store, sourceLocation: sourceLocation)
    #expect(error.map { "\($0)".contains(store) } == true, sourceLocation: sourceLocation)
    if let text {
        #expect(error?.message.contains(text) == true, "\(String(describing: error))", sourceLocation: sourceLocation)
    }
}

/// Inserts a town through one new background context and reads it back through another.
private func expectSavesAndFetches(
    _ stack: some PersistentStack, town name: String,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let writer = stack.newBackgroundContext()
    try await writer.perform {
        let t = Town(context: writer)
        t.name = name
        try writer.save()
    }
    let reader = stack.newBackgroundContext()
    let names = try await reader.perform {
        try reader.fetch(FetchRequest<Town>(predicate: #Predicate { $0.name == name })).map(\.name)
    }
    #expect(names == [name], sourceLocation: sourceLocation)
}

/// Inserts an HR employee (the name doubles as the e-mail's local part).
private func insertEmployee(_ context: ManagedObjectContext, _ name: String) throws -> ManagedObject {
    let e = try context.insertNewObject(forEntityName: "Employee")
    try e.setValue(name, forKey: "name")
    try e.setValue("\(name)@example.com", forKey: "email")
    return e
}

private func employeeNames(_ context: ManagedObjectContext) throws -> [String] {
    try context.fetch(FetchRequest<ManagedObject>(entityName: "Employee")).compactMap { try $0.value(forKey: "name") as? String }.sorted()
}

// MARK: 1. Bad inputs

@Suite("Stack behaviour: bad inputs leave the other stores working", .timeLimit(.minutes(10)))
struct StackBadInputTests {
    /// A started connect with one working store in `dir`.
    func startedConnect(_ dir: TemporaryDirectory) throws -> GenericConnect<ContextStrategy.Direct> {
        let connect = GenericConnect<ContextStrategy.Direct>(name: "Bad", managedObjectModel: try townModel())
        connect.storeLocation = dir.url
        try connect.start()
        return connect
    }

    func expectOnlyTheGoodStore(
        _ connect: GenericConnect<ContextStrategy.Direct>, _ dir: TemporaryDirectory,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(
            connect.persistentStoreCoordinator.persistentStores.map(\.url?.path) == [dir.file("Bad.sqlite").path],
            sourceLocation: sourceLocation)
        #expect(connect.attachedStores.count == 1, sourceLocation: sourceLocation)
    }

    @Test func readOnlyAndUncreatableLocations() async throws {
        let dir = try TemporaryDirectory()
        let connect = try startedConnect(dir)

        // An existing directory nobody can create files in (not even root).
        expectError(.storeOpenFailed, store: "/proc/self/Bad.sqlite") {
            try connect.attachPersistentStore(at: URL(fileURLWithPath: "/proc/self", isDirectory: true))
        }
        expectOnlyTheGoodStore(connect, dir)
        try await expectSavesAndFetches(connect, town: "after read-only")

        // A missing directory that cannot be created.
        let missing = "/proc/coherence-\(UUID().uuidString)"
        expectError(.invalidLocation, store: missing) {
            try connect.attachPersistentStore(at: URL(fileURLWithPath: missing, isDirectory: true))
        }
        #expect(!FileManager.default.fileExists(atPath: missing))

        // A missing directory whose parent is a regular file.
        let plain = dir.file("plain.txt")
        try Data("not a directory".utf8).write(to: plain)
        expectError(.invalidLocation, store: plain.path + "/users") {
            try connect.attachPersistentStore(at: plain.appendingPathComponent("users", isDirectory: true))
        }
        // The location itself is a regular file.
        expectError(.invalidLocation, store: plain.path, mentioning: "not a directory") {
            try connect.attachPersistentStore(at: plain)
        }
        #expect(try Data(contentsOf: plain) == Data("not a directory".utf8))
        expectOnlyTheGoodStore(connect, dir)
        try await expectSavesAndFetches(connect, town: "after uncreatable")
    }

    @Test func aTextFileNamedLikeTheStoreIsNotOpenedOrChanged() async throws {
        let dir = try TemporaryDirectory()
        let connect = try startedConnect(dir)
        let textDirectory = dir.file("notes")
        try FileManager.default.createDirectory(at: textDirectory, withIntermediateDirectories: true)
        let text = textDirectory.appendingPathComponent("Bad.sqlite")
        let content = Data("Shopping list:\n- milk\n- bread\n".utf8)
        try content.write(to: text)

        expectError(.storeOpenFailed, store: text.path, mentioning: "not a SQLite database") {
            try connect.attachPersistentStore(at: textDirectory)
        }
        #expect(try Data(contentsOf: text) == content)
        #expect(!exists(companion(text, "-wal")) && !exists(companion(text, "-shm")))
        #expect(openFiles(under: textDirectory).isEmpty)
        // overwriteIncompatibleStore is for stores of another model, not for files that are not stores.
        expectError(.storeOpenFailed, store: text.path) {
            try connect.attachPersistentStore(at: textDirectory, for: StoreConfiguration(overwriteIncompatibleStore: true))
        }
        #expect(try Data(contentsOf: text) == content)
        expectOnlyTheGoodStore(connect, dir)
        try await expectSavesAndFetches(connect, town: "after text file")
    }

    @Test func attachingSeveralStoresRollsBackWhenOneFails() async throws {
        let dir = try TemporaryDirectory()
        let connect = try startedConnect(dir)
        try Data("plain text".utf8).write(to: dir.file("broken.sqlite"))
        let error = #expect(throws: CoherenceError.self) {
            try connect.attachPersistentStores(for: [
                StoreConfiguration(fileName: "fine.sqlite"),
                StoreConfiguration(fileName: "broken.sqlite")
            ])
        }
        #expect(error?.code == .storeOpenFailed)
        #expect(error?.store == dir.file("broken.sqlite").path)
        expectOnlyTheGoodStore(connect, dir)  // fine.sqlite was detached again
        #expect(openFiles(under: dir.url).allSatisfy { !$0.contains("fine.sqlite") && !$0.contains("broken.sqlite") })
        try await expectSavesAndFetches(connect, town: "after rollback")
    }

    @Test func attachingTheSameFileTwiceOrAnUnknownConfigurationFails() async throws {
        let dir = try TemporaryDirectory()
        let connect = try startedConnect(dir)
        let path = dir.file("Bad.sqlite").path
        expectError(.alreadyAttached, store: path) { try connect.attachPersistentStore() }
        // The same file through another spelling of its location (the error names it as given).
        try FileManager.default.createDirectory(at: dir.file("sub"), withIntermediateDirectories: true)
        expectError(.alreadyAttached, store: dir.url.path + "/sub/../Bad.sqlite") {
            try connect.attachPersistentStore(at: dir.url.appendingPathComponent("sub/..", isDirectory: true))
        }
        let unknown = #expect(throws: CoherenceError.self) {
            try connect.attachPersistentStore(for: StoreConfiguration(fileName: "x.sqlite", name: "NoSuchConfiguration"))
        }
        #expect(unknown?.code == .invalidRequest)
        #expect(unknown?.message.contains("NoSuchConfiguration") == true)
        #expect(!exists(dir.file("x.sqlite")))
        expectOnlyTheGoodStore(connect, dir)
        try await expectSavesAndFetches(connect, town: "after duplicates")
    }

    @Test func detachingTwiceOrAnotherContainersStoreIsStoreNotAttached() async throws {
        let dir = try TemporaryDirectory()
        let connect = try startedConnect(dir)
        let second = try connect.attachPersistentStore(at: dir.url, for: StoreConfiguration(fileName: "second.sqlite"))
        try connect.detach(persistentStore: second)
        expectError(.storeNotAttached, store: dir.file("second.sqlite").path) { try connect.detach(persistentStore: second) }
        expectOnlyTheGoodStore(connect, dir)

        let other = GenericPersistentContainer<ContextStrategy.Direct>(name: "Other", managedObjectModel: try townModel())
        let otherLocation = dir.file("other")
        let foreign = try other.attachPersistentStore(at: otherLocation)
        expectError(.storeNotAttached, store: otherLocation.appendingPathComponent("Other.sqlite").path) {
            try connect.detach(persistentStore: foreign)
        }
        // detach(persistentStores:) reports the first failure and still detaches the others.
        let third = try connect.attachPersistentStore(at: dir.url, for: StoreConfiguration(fileName: "third.sqlite"))
        #expect(throws: CoherenceError.self) { try connect.detach(persistentStores: [foreign, third]) }
        #expect(!connect.persistentStoreCoordinator.persistentStores.contains { $0 === third })

        // Both containers still work.
        #expect(other.persistentStoreCoordinator.persistentStores.first === foreign)
        expectOnlyTheGoodStore(connect, dir)
        try await expectSavesAndFetches(connect, town: "mine")
        try await expectSavesAndFetches(other, town: "theirs")
    }
}

// MARK: 2. Incompatible stores

@Suite("Stack behaviour: incompatible stores", .timeLimit(.minutes(10)))
struct StackIncompatibleStoreTests {
    @Test func anIncompatibleStoreIsKeptUnlessOverwriteIsSet() async throws {
        let dir = try TemporaryDirectory()
        let marker = "OldTown-\(UUID().uuidString)"
        // Model A's store, kept open so that its -wal and -shm files exist.
        let a = GenericPersistentContainer<ContextStrategy.Direct>(name: "Shared", managedObjectModel: try townModel())
        a.storeLocation = dir.url
        try a.attachPersistentStore()
        try await expectSavesAndFetches(a, town: marker)
        let file = dir.file("Shared.sqlite"), wal = companion(file, "-wal"), shm = companion(file, "-shm")
        #expect(exists(wal) && exists(shm))
        let fileBefore = try Data(contentsOf: file), walBefore = try Data(contentsOf: wal)
        #expect((fileBefore + walBefore).range(of: Data(marker.utf8)) != nil)
        let inodes = [inode(file), inode(wal), inode(shm)]

        // Model B without overwrite: an error, and the files are untouched.
        let modelB = try ManagedObjectModel(types: [Sample.self])
        let b = GenericPersistentContainer<ContextStrategy.Direct>(name: "Shared", managedObjectModel: modelB)
        b.storeLocation = dir.url
        expectError(.storeIncompatible, store: file.path) { try b.attachPersistentStore() }
        #expect(b.persistentStoreCoordinator.persistentStores.isEmpty && b.attachedStores.isEmpty)
        #expect(try Data(contentsOf: file) == fileBefore)
        #expect(try Data(contentsOf: wal) == walBefore)
        #expect([inode(file), inode(wal), inode(shm)] == inodes)

        // With overwrite: a new, empty, usable store; the old files and their data are gone.
        let store = try b.attachPersistentStore(for: StoreConfiguration(overwriteIncompatibleStore: true))
        #expect(store.url?.path == file.path)
        #expect(inode(file) != inodes[0])
        #expect(!exists(wal) || inode(wal) != inodes[1])
        #expect(!exists(shm) || inode(shm) != inodes[2])
        #expect(permissions(file) == 0o600)
        let context = b.newBackgroundContext()
        let (before, after): (Int, [String]) = try await context.perform {
            let before = try context.count(for: FetchRequest<Sample>())
            let s = Sample(context: context)
            s.s = "fresh"
            try context.save()
            return (before, try context.fetch(FetchRequest<Sample>()).map(\.s))
        }
        #expect(before == 0 && after == ["fresh"])
        let newBytes = try Data(contentsOf: file) + ((try? Data(contentsOf: wal)) ?? Data())
        #expect(newBytes.range(of: Data(marker.utf8)) == nil)
        #expect(newBytes.range(of: Data("fresh".utf8)) != nil)
        try a.detach(persistentStores: a.attachedStores)
    }
}

// MARK: 3. Several stores

@Suite("Stack behaviour: several stores, per-user stores, detach and deinit", .timeLimit(.minutes(10)))
struct StackStoresTests {
    @Test func severalStoresShareOneLocation() async throws {
        let dir = try TemporaryDirectory()
        let connect = GenericConnect<ContextStrategy.Direct>(name: "HR", bundle: .module)
        connect.storeLocation = dir.url
        let stores = try connect.attachPersistentStores(for: [
            StoreConfiguration(name: "PersistentData"),
            StoreConfiguration(name: "TransientData"),
            StoreConfiguration(fileName: "archive.db", name: "PersistentData")
        ])
        try connect.start()
        #expect(connect.persistentStoreCoordinator.persistentStores.count == 3)  // start attached nothing more
        for name in ["HR.persistentdata.sqlite", "HR.transientdata.sqlite", "archive.db"] {
            #expect(permissions(dir.file(name)) == 0o600, "\(name)")
        }
        let context = connect.newBackgroundContext()
        let (employee, session) = try await context.perform {
            let e = try insertEmployee(context, "ada")
            let s = try context.insertNewObject(forEntityName: "Session")
            try s.setValue("token-1", forKey: "token")
            try context.save()
            return (e.objectID, s.objectID)
        }
        #expect(employee.storeIdentifier == stores[0].identifier)  // the first store holding the entity
        #expect(session.storeIdentifier == stores[1].identifier)
        // Without the first store, new employees go to the archive; fetches span every store.
        try connect.detach(persistentStore: stores[0])
        let archived = connect.newBackgroundContext()
        let (archivedID, onlyArchive) = try await archived.perform {
            let e = try insertEmployee(archived, "bob")
            try archived.save()
            return (e.objectID, try employeeNames(archived))
        }
        #expect(archivedID.storeIdentifier == stores[2].identifier)
        #expect(onlyArchive == ["bob"])
        try connect.attachPersistentStore(for: StoreConfiguration(name: "PersistentData"))
        let reader = connect.newBackgroundContext()
        #expect(try await reader.perform { try employeeNames(reader) } == ["ada", "bob"])
    }

    @Test func oneStorePerUserAttachedBeforeAndAfterStart() async throws {
        let dir = try TemporaryDirectory()
        let connect = GenericConnect<ContextStrategy.Mixed>(name: "HR", bundle: .module)
        connect.storeLocation = dir.url
        // Before start: a global in-memory store; start then attaches no default store.
        try connect.attachPersistentStore(for: StoreConfiguration(name: "TransientData", type: .inMemory))
        try connect.start()
        #expect(connect.persistentStoreCoordinator.persistentStores.map(\.type) == [.inMemory])
        #expect(!exists(dir.file("HR.sqlite")))
        // After start: each user's store at <location>/<user>, attached at login, detached at logout.
        for user in ["alice", "bob"] {
            let location = try StoreLocation.location(forUser: user, under: dir.url)
            let store = try connect.attachPersistentStore(at: location, for: StoreConfiguration(name: "PersistentData"))
            #expect(store.url?.path == dir.file("\(user)/HR.persistentdata.sqlite").path)
            #expect(permissions(location) == 0o700 && permissions(location.appendingPathComponent("HR.persistentdata.sqlite")) == 0o600)
            let context = connect.newBackgroundContext()
            let names = try await context.perform {
                _ = try insertEmployee(context, user)
                try context.save()
                return try employeeNames(context)
            }
            #expect(names == [user])  // the other user's store is not attached
            try connect.detach(persistentStore: store)
            #expect(openFiles(under: location).isEmpty)
        }
        #expect(connect.persistentStoreCoordinator.persistentStores.count == 1)
        // Both users at once: fetches see both stores.
        let both = try ["alice", "bob"].map {
            try connect.attachPersistentStore(
                at: StoreLocation.location(forUser: $0, under: dir.url), for: StoreConfiguration(name: "PersistentData"))
        }
        let reader = connect.newBackgroundContext()
        #expect(try await reader.perform { try employeeNames(reader) } == ["alice", "bob"])
        try connect.detach(persistentStores: both)
        try connect.stop()
        #expect(connect.persistentStoreCoordinator.persistentStores.isEmpty)
    }

    @Test func missingDirectoriesAreCreatedForTheOwnerOnlyAndStoreFilesAreOwnerOnly() async throws {
        let dir = try TemporaryDirectory()
        let container = GenericPersistentContainer<ContextStrategy.Direct>(name: "Deep", managedObjectModel: try townModel())
        let location = dir.file("a/b/c")
        try container.attachPersistentStore(at: location)
        try await expectSavesAndFetches(container, town: "Oslo")
        for path in ["a", "a/b", "a/b/c"] {
            #expect(permissions(dir.file(path)) == 0o700, "\(path)")
        }
        let file = location.appendingPathComponent("Deep.sqlite")
        for url in [file, companion(file, "-wal"), companion(file, "-shm")] {
            #expect(exists(url) && permissions(url) == 0o600, "\(url.lastPathComponent)")
        }
    }

    @Test func aDetachedStoreIsClosedAndCanBeDeletedAndAttachedFresh() async throws {
        let dir = try TemporaryDirectory()
        let container = GenericPersistentContainer<ContextStrategy.Direct>(name: "Scratch", managedObjectModel: try townModel())
        container.storeLocation = dir.url
        let store = try container.attachPersistentStore()
        try await expectSavesAndFetches(container, town: "Oslo")
        #expect(!openFiles(under: dir.url).isEmpty)
        try container.detach(persistentStore: store)
        #expect(!container.persistentStoreCoordinator.persistentStores.contains { $0 === store })
        #expect(container.attachedStores.isEmpty)
        #expect(openFiles(under: dir.url).isEmpty)
        let file = dir.file("Scratch.sqlite")
        for url in [file, companion(file, "-wal"), companion(file, "-shm")] where exists(url) {
            try FileManager.default.removeItem(at: url)
        }
        let fresh = try container.attachPersistentStore()
        #expect(fresh.identifier != store.identifier)
        let context = container.newBackgroundContext()
        #expect(try await context.perform { try context.count(for: FetchRequest<Town>()) } == 0)
        try await expectSavesAndFetches(container, town: "Oslo")  // no uniqueness conflict with the deleted store
    }

    @Test func deinitialisingAContainerDetachesItsStores() async throws {
        let dir = try TemporaryDirectory()
        let model = try townModel()
        let coordinator: PersistentStoreCoordinator
        weak var weakConnect: GenericConnect<ContextStrategy.Mixed>?
        do {
            let connect = GenericConnect<ContextStrategy.Mixed>(name: "Gone", managedObjectModel: model)
            connect.storeLocation = dir.url
            try connect.attachPersistentStores(for: [
                StoreConfiguration(), StoreConfiguration(fileName: "second.sqlite"),
                StoreConfiguration(type: .inMemory)
            ])
            try connect.start()
            try await expectSavesAndFetches(connect, town: "Oslo")
            coordinator = connect.persistentStoreCoordinator
            weakConnect = connect
            #expect(coordinator.persistentStores.count == 3)
        }
        #expect(weakConnect == nil)
        #expect(coordinator.persistentStores.isEmpty)
        #expect(openFiles(under: dir.url).isEmpty)
    }
}

// MARK: 4. Lifecycle

/// How a completion block was called.
struct BlockOutcome: Sendable {
    var calls: Int
    var onCallerThread: Bool
    var error: (any Error)?
    var timedOut: Bool
}

/// Records calls of a completion block.
final class BlockRecord: @unchecked Sendable {
    // @unchecked Sendable: every field is behind the lock.
    private let lock = NSLock()
    private var calls = 0
    private var onCallerThread = false
    private var error: (any Error)?

    func note(onCallerThread: Bool, error: (any Error)?) {
        lock.withLock {
            calls += 1
            self.onCallerThread = self.onCallerThread || onCallerThread
            if calls == 1 { self.error = error }
        }
    }

    var callCount: Int { lock.withLock { calls } }

    func outcome(timedOut: Bool) -> BlockOutcome {
        lock.withLock { BlockOutcome(calls: calls, onCallerThread: onCallerThread, error: error, timedOut: timedOut) }
    }
}

/// Calls `call` on a thread of its own, which then waits for the completion block, and reports how
/// the block was called. (A thread of its own, so the block cannot run on it unless `call` runs
/// the block itself.)
private func callFromOwnThread(
    _ record: BlockRecord,
    _ call: @escaping @Sendable (@escaping @Sendable ((any Error)?) -> Void) -> Void
) async -> BlockOutcome {
    await withCheckedContinuation { (continuation: CheckedContinuation<BlockOutcome, Never>) in
        let thread = Thread {
            let caller = pthread_self()
            let done = DispatchSemaphore(value: 0)
            call { error in
                record.note(onCallerThread: pthread_equal(pthread_self(), caller) != 0, error: error)
                done.signal()
            }
            let timedOut = done.wait(timeout: .now() + 30) == .timedOut
            continuation.resume(returning: record.outcome(timedOut: timedOut))
        }
        thread.start()
    }
}

@Suite("Stack behaviour: lifecycle", .timeLimit(.minutes(10)))
struct StackLifecycleTests {
    @Test func startAndStopAreIdempotentAndRestartable() async throws {
        let dir = try TemporaryDirectory()
        let connect = GenericConnect<ContextStrategy.Direct>(name: "Life", managedObjectModel: try townModel())
        connect.storeLocation = dir.url
        #expect(connect.state == .stopped && !connect.isStarted)
        try connect.start()
        let first = connect.persistentStoreCoordinator.persistentStores
        try connect.start()
        #expect(connect.state == .started)
        #expect(connect.persistentStoreCoordinator.persistentStores.count == 1)
        #expect(connect.persistentStoreCoordinator.persistentStores.first === first.first)
        try await expectSavesAndFetches(connect, town: "Oslo")
        try connect.stop()
        #expect(connect.state == .stopped && connect.persistentStoreCoordinator.persistentStores.isEmpty)
        #expect(connect.attachedStores.isEmpty)
        #expect(openFiles(under: dir.url).isEmpty)
        try connect.stop()
        #expect(connect.state == .stopped)
        try connect.start()
        #expect(connect.isStarted)
        let context = connect.newBackgroundContext()
        #expect(try await context.perform { try context.fetch(FetchRequest<Town>()).map(\.name) } == ["Oslo"])
    }

    @Test func asyncStartAndStopCallTheirBlockOnceOffTheCallersThread() async throws {
        let dir = try TemporaryDirectory()
        let connect = GenericConnect<ContextStrategy.Direct>(name: "Life", managedObjectModel: try townModel())
        connect.storeLocation = dir.url
        let started = BlockRecord()
        let start = await callFromOwnThread(started) { block in connect.start(block: block) }
        #expect(!start.timedOut && start.calls == 1 && !start.onCallerThread)
        #expect(start.error == nil)
        #expect(connect.state == .started)
        let stopped = BlockRecord()
        let stop = await callFromOwnThread(stopped) { block in connect.stop(block: block) }
        #expect(!stop.timedOut && stop.calls == 1 && !stop.onCallerThread)
        #expect(stop.error == nil)
        #expect(connect.state == .stopped && connect.persistentStoreCoordinator.persistentStores.isEmpty)
        // Still exactly once.
        #expect(started.callCount == 1 && stopped.callCount == 1)
    }

    @Test func suspendedReadsBackWhatWasSet() throws {
        let dir = try TemporaryDirectory()
        let connect = GenericConnect<ContextStrategy.Direct>(name: "Life", managedObjectModel: try townModel())
        connect.storeLocation = dir.url
        #expect(!connect.suspended)
        try connect.start()
        #expect(!connect.suspended)
        connect.suspended = true
        #expect(connect.suspended)
        connect.suspended = false
        #expect(!connect.suspended)
    }

    @Test func startWithAMissingModelThrowsTheModelError() async throws {
        let dir = try TemporaryDirectory()
        let connect = GenericConnect<ContextStrategy.Mixed>(name: "NoSuchModel", bundle: .module)
        connect.storeLocation = dir.url
        let error = #expect(throws: ModelError.self) { try connect.start() }
        #expect(error?.code == .modelNotFound)
        #expect(connect.state == .stopped)
        #expect(throws: ModelError.self) { try connect.attachPersistentStore() }
        let record = BlockRecord()
        let outcome = await callFromOwnThread(record) { block in connect.start(block: block) }
        #expect(outcome.calls == 1 && !outcome.onCallerThread)
        #expect((outcome.error as? ModelError)?.code == .modelNotFound)
        #expect(connect.state == .stopped)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).isEmpty)
    }
}

// MARK: 5. Strategies

/// One ObjectsDidChange notification, as seen by an observer.
struct ObservedChange: Sendable {
    var onExecutor: Bool
    var inserted: Set<ObjectID>
    var updated: Set<ObjectID>
    var deleted: Set<ObjectID>
    var all: Set<ObjectID> { inserted.union(updated).union(deleted) }
}

/// Observes a context's notifications through NotificationCenter, recording whether each was
/// posted on `executor`'s executor.
final class StackNotificationRecorder: @unchecked Sendable {
    // @unchecked Sendable: `seen` is behind the lock; the token is set once in init.
    let stream: AsyncStream<ObservedChange>
    private let lock = NSLock()
    private var seen: [ObservedChange] = []
    private var token: (any NSObjectProtocol)?

    init(_ name: Notification.Name, of context: ManagedObjectContext, executor: ManagedObjectContext) {
        let (stream, continuation) = AsyncStream<ObservedChange>.makeStream()
        self.stream = stream
        token = NotificationCenter.default.addObserver(forName: name, object: context, queue: nil) { [weak self] note in
            let info = note.userInfo ?? [:]
            func ids(_ key: String) -> Set<ObjectID> { info[key] as? Set<ObjectID> ?? [] }
            let change = ObservedChange(
                onExecutor: executor.isOnExecutor,
                inserted: ids(ManagedObjectContext.NotificationKey.insertedObjectIDs),
                updated: ids(ManagedObjectContext.NotificationKey.updatedObjectIDs),
                deleted: ids(ManagedObjectContext.NotificationKey.deletedObjectIDs))
            self?.lock.withLock { self?.seen.append(change) }
            continuation.yield(change)
        }
    }

    var all: [ObservedChange] { lock.withLock { seen } }

    deinit { if let token { NotificationCenter.default.removeObserver(token) } }
}

/// The next element of `iterator` that satisfies `condition` (nil when the test is cancelled).
private func next<T: Sendable>(_ iterator: inout AsyncStream<T>.Iterator, where condition: (T) -> Bool) async -> T? {
    while let element = await iterator.next() {
        if condition(element) { return element }
    }
    return nil
}

/// An error handed to a container's error handler.
struct HandledError: Sendable {
    var error: any Error
    var onMainQueue: Bool
    var onRootQueue: Bool
}

@Suite("Stack behaviour: context strategies", .timeLimit(.minutes(10)))
struct StackStrategyBehaviourTests {
    static func rootContext<S: ContextStrategyType>(_ strategy: S) -> ManagedObjectContext? {
        (strategy as? ContextStrategy.IndirectNested)?.rootContext ?? (strategy as? ContextStrategy.Mixed)?.rootContext
    }

    /// Background insert, update and delete; a view-context save; two background contexts of which
    /// one is released; then everything on disk after a restart.
    func exercise<S: ContextStrategyType>(_: S.Type, updatesView: Bool) async throws {
        let dir = try TemporaryDirectory()
        let model = try townModel()
        let connect = GenericConnect<S>(name: "Flow", managedObjectModel: model)
        connect.storeLocation = dir.url
        try connect.start()
        let view = connect.viewContext
        let coordinator = connect.persistentStoreCoordinator
        let root = Self.rootContext(connect.strategy)
        let viewChanges = StackNotificationRecorder(ManagedObjectContext.objectsDidChangeNotification, of: view, executor: view)
        var changes = viewChanges.stream.makeAsyncIterator()
        let rootWrites = root.map { StackNotificationRecorder(ManagedObjectContext.willSaveNotification, of: $0, executor: view) }
        var rootEvents = root?.events.makeAsyncIterator()

        /// Waits until the store satisfies `condition` (root contexts write asynchronously), then
        /// until the root has handed the save's permanent IDs to the view context.
        func settle(_ condition: () throws -> Bool, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            if root != nil {
                while try !condition() {
                    guard await rootEvents?.next() != nil else { break }
                }
            }
            #expect(try condition(), sourceLocation: sourceLocation)
            if let root {
                await root.perform {}
                await view.perform {}
            }
        }
        func count<T: ManagedObject>(_: T.Type) throws -> Int { try coordinator.count(for: FetchRequest<T>()) }

        // Insert.
        let inserter = connect.newBackgroundContext()
        let (townID, adaID, bobID) = try await inserter.perform {
            let t = Town(context: inserter)
            t.name = "Oslo"
            t.population = 1
            let ada = Person(context: inserter)
            ada.name = "Ada"
            ada.town = t
            let bob = Person(context: inserter)
            bob.name = "Bob"
            bob.town = t
            try inserter.save()
            return (t.objectID, ada.objectID, bob.objectID)
        }
        if updatesView {
            let change = await next(&changes) { $0.inserted.isSuperset(of: [townID, adaID, bobID]) }
            #expect(change?.onExecutor == true)
        }
        try await settle { try count(Person.self) == 2 }
        // The view context's objects, loaded so that updates and deletes have something to change.
        let (viewNames, viewTownID, viewBobID) = try await view.perform {
            let people = try view.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]))
            _ = people.first?.town?.population  // fire the fault: the view holds the town's values
            return (people.map(\.name), people.first?.town?.objectID, people.last?.objectID)
        }
        #expect(viewNames == ["Ada", "Bob"])

        // Update.
        let updater = connect.newBackgroundContext()
        let updatedID = try await updater.perform {
            guard let t = try updater.fetch(FetchRequest<Town>()).first else { throw CoherenceError(.objectNotFound, "no town") }
            t.population = 2
            try updater.save()
            return t.objectID
        }
        if updatesView {
            let change = await next(&changes) { $0.updated.contains(updatedID) }
            #expect(change?.onExecutor == true)
        }
        try await settle { try coordinator.fetchDictionaries(FetchRequest<Town>()).first?["population"] as? Int == 2 }
        let viewPopulation = await view.perform { viewTownID.flatMap { (view.registeredObject(for: $0) as? Town)?.population } }
        #expect(viewPopulation == (updatesView ? 2 : 1))

        // Delete.
        let deleter = connect.newBackgroundContext()
        let deletedID = try await deleter.perform {
            guard let bob = try deleter.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "Bob" })).first else {
                throw CoherenceError(.objectNotFound, "no Bob")
            }
            deleter.delete(bob)
            try deleter.save()
            return bob.objectID
        }
        if updatesView {
            let change = await next(&changes) { $0.deleted.contains(deletedID) }
            #expect(change?.onExecutor == true)
        }
        try await settle { try count(Person.self) == 1 }
        let (namesAfterDelete, bobDeletedInView) = try await view.perform {
            (try view.fetch(FetchRequest<Person>()).map(\.name), viewBobID.map { view.registeredObject(for: $0)?.isDeleted ?? true })
        }
        if updatesView {
            #expect(namesAfterDelete == ["Ada"])
            #expect(bobDeletedInView == true)
        } else {
            // Nothing reached the view context (a merge would have been queued before save returned,
            // and the view.perform above ran after it): its loaded objects are as they were …
            #expect(bobDeletedInView == false)
            #expect(viewChanges.all.allSatisfy { !$0.all.contains(townID) && !$0.all.contains(bobID) && !$0.all.contains(adaID) })
            // … while a new background context sees the saved state.
            let fresh = connect.newBackgroundContext()
            let seen = try await fresh.perform {
                (try fresh.fetch(FetchRequest<Person>()).map(\.name), try fresh.fetch(FetchRequest<Town>()).map(\.population))
            }
            #expect(seen.0 == ["Ada"] && seen.1 == [2])
        }

        // A view-context save (written by the root context where there is one).
        let chessID = try await view.perform {
            let c = Club(context: view)
            c.title = "Chess"
            try view.save()
            return c.objectID
        }
        _ = chessID
        try await settle { try count(Club.self) == 1 }

        // Two background contexts; releasing one does not stop the other's saves being merged.
        let keeper = connect.newBackgroundContext()
        do {
            let transient = connect.newBackgroundContext()
            let goID = try await transient.perform {
                let c = Club(context: transient)
                c.title = "Go"
                try transient.save()
                return c.objectID
            }
            if updatesView { #expect(await next(&changes) { $0.inserted.contains(goID) } != nil) }
            try await settle { try count(Club.self) == 2 }
        }
        let bridgeID = try await keeper.perform {
            let c = Club(context: keeper)
            c.title = "Bridge"
            try keeper.save()
            return c.objectID
        }
        if updatesView {
            let change = await next(&changes) { $0.inserted.contains(bridgeID) }
            #expect(change?.onExecutor == true)
        }
        try await settle { try count(Club.self) == 3 }

        // Every ObjectsDidChange of the view context was posted on the main queue; the root
        // context wrote off it.
        #expect(viewChanges.all.allSatisfy { $0.onExecutor })
        if let rootWrites {
            #expect(!rootWrites.all.isEmpty)
            #expect(rootWrites.all.allSatisfy { !$0.onExecutor })
        }

        // On disk after a restart.
        try connect.stop()
        let again = GenericConnect<S>(name: "Flow", managedObjectModel: model)
        again.storeLocation = dir.url
        try again.start()
        let check = again.newBackgroundContext()
        let (towns, people, clubs) = try await check.perform {
            (
                try check.fetch(FetchRequest<Town>()).map { "\($0.name):\($0.population)" },
                try check.fetch(FetchRequest<Person>()).map { "\($0.name)@\($0.town?.name ?? "-")" },
                try check.fetch(FetchRequest<Club>(sortBy: [SortDescriptor(\.title)])).map(\.title)
            )
        }
        #expect(towns == ["Oslo:2"])
        #expect(people == ["Ada@Oslo"])
        #expect(clubs == ["Bridge", "Chess", "Go"])
    }

    @Test func direct() async throws { try await exercise(ContextStrategy.Direct.self, updatesView: true) }
    @Test func directIndependent() async throws { try await exercise(ContextStrategy.DirectIndependent.self, updatesView: false) }
    @Test func indirectNested() async throws { try await exercise(ContextStrategy.IndirectNested.self, updatesView: true) }
    @Test func mixed() async throws { try await exercise(ContextStrategy.Mixed.self, updatesView: true) }

    /// A uniqueness conflict that only the root context's store write finds: the save that
    /// started it succeeds, and the error reaches the container's error handler off the main and
    /// root queues.
    func propagationError<S: ContextStrategyType>(_: S.Type, fromView: Bool) async throws {
        let dir = try TemporaryDirectory()
        let connect = GenericConnect<S>(name: "Errors", managedObjectModel: try townModel())
        connect.storeLocation = dir.url
        try connect.start()
        let view = connect.viewContext
        let root = try #require(Self.rootContext(connect.strategy))
        let (errors, errorSink) = AsyncStream<HandledError>.makeStream()
        connect.errorHandler = { error in
            errorSink.yield(HandledError(error: error, onMainQueue: view.isOnExecutor, onRootQueue: root.isOnExecutor))
        }
        // "Oslo" is in the store already.
        let direct = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: connect.persistentStoreCoordinator)
        try await direct.perform {
            let t = Town(context: direct)
            t.name = "Oslo"
            try direct.save()
        }
        // A second "Oslo" saved where the root context writes it.
        let saver = fromView ? view : connect.newBackgroundContext()
        await #expect(throws: Never.self) {
            try await saver.perform {
                let t = Town(context: saver)
                t.name = "Oslo"
                t.population = 7
                try saver.save()
            }
        }
        var iterator = errors.makeAsyncIterator()
        let handled = await iterator.next()
        let error = handled?.error as? CoherenceError
        #expect(error?.code == .conflict, "\(String(describing: handled?.error))")
        #expect(error?.conflicts.first?.kind == .uniqueness)
        #expect(handled?.onMainQueue == false && handled?.onRootQueue == false)
        #expect(try connect.persistentStoreCoordinator.fetchDictionaries(FetchRequest<Town>()).map { $0["population"] as? Int } == [0])
    }

    @Test func indirectNestedPropagationErrorsReachTheErrorHandler() async throws {
        try await propagationError(ContextStrategy.IndirectNested.self, fromView: false)
    }
    @Test func mixedPropagationErrorsReachTheErrorHandler() async throws {
        try await propagationError(ContextStrategy.Mixed.self, fromView: true)
    }
}

// MARK: 6. Transformable attributes

struct StackPlace: Codable, Equatable, Sendable {
    var latitude: Double
    var longitude: Double
}

final class StackNote: ManagedObject {
    @Attribute var title: String = ""
    @Transformed var tags: [String] = []
    @Transformed var place: StackPlace? = nil
}

/// Stores a list of strings as comma-separated text.
struct StackCSVTransformer: AttributeTransformer {
    func data(from value: Any) throws -> Data {
        guard let list = value as? [String] else { throw CoherenceError(.typeMismatch, "not a [String]: \(type(of: value))") }
        return Data(list.joined(separator: ",").utf8)
    }
    func value(from data: Data) throws -> Any {
        String(decoding: data, as: UTF8.self).split(separator: ",").map(String.init)
    }
}

/// Not Encodable.
final class StackOpaque {}

@Suite("Stack behaviour: transformable attributes", .timeLimit(.minutes(10)))
struct StackTransformableTests {
    @Test func xcodeModelTransformableWithoutARegisteredTransformerUsesJSON() async throws {
        let dir = try TemporaryDirectory()
        let container = GenericPersistentContainer<ContextStrategy.Direct>(name: "HR", bundle: .module)
        container.storeLocation = dir.url
        try container.attachPersistentStore(for: StoreConfiguration(name: "PersistentData"))
        #expect(
            container.managedObjectModel.entitiesByName["Employee"]?.attributesByName["tags"]?.valueTransformerName
                == "NSSecureUnarchiveFromData")
        #expect(AttributeTransformers.transformer(named: "NSSecureUnarchiveFromData") == nil)
        let writer = container.newBackgroundContext()
        // (Expectations are checked outside perform blocks: those run on the contexts' queues.)
        let badValueErrors: [CoherenceError.Code?] = try await writer.perform {
            let ada = try insertEmployee(writer, "ada")
            try ada.setValue(["swift", "sqlite"], forKey: "tags")
            let bob = try insertEmployee(writer, "bob")
            try bob.setEncodedValue(["go"], forKey: "tags")
            let eve = try insertEmployee(writer, "eve")
            try eve.setValue(["x"], forKey: "tags")
            try eve.setEncodedValue(nil as [String]?, forKey: "tags")
            // Bad values are errors, not crashes.
            var codes: [CoherenceError.Code?] = []
            do { try ada.setValue(StackOpaque(), forKey: "tags"); codes.append(nil) } catch {
                codes.append((error as? CoherenceError)?.code)
            }
            do { try ada.setEncodedValue(["nope"], forKey: "name"); codes.append(nil) } catch {
                codes.append((error as? CoherenceError)?.code)
            }
            try writer.save()
            return codes
        }
        #expect(badValueErrors == [.typeMismatch, .unknownKey])
        struct Read: Sendable {
            var ada: [String]?, adaRaw: Data?, bob: [String]?, eve: [String]?, eveRawIsNil: Bool
            var mismatch: CoherenceError.Code?, unknown: CoherenceError.Code?
        }
        let reader = container.newBackgroundContext()
        let read: Read = try await reader.perform {
            var byName: [String: ManagedObject] = [:]
            for e in try reader.fetch(FetchRequest<ManagedObject>(entityName: "Employee")) {
                if let name = try e.value(forKey: "name") as? String { byName[name] = e }
            }
            guard let ada = byName["ada"], let bob = byName["bob"], let eve = byName["eve"] else {
                throw CoherenceError(.objectNotFound, "missing employees: \(byName.keys.sorted())")
            }
            var r = Read(
                ada: try ada.decodedValue(forKey: "tags", as: [String].self), adaRaw: try ada.value(forKey: "tags") as? Data,
                bob: try bob.decodedValue(forKey: "tags", as: [String].self),
                eve: try eve.decodedValue(forKey: "tags", as: [String].self), eveRawIsNil: try eve.value(forKey: "tags") == nil)
            do { _ = try ada.decodedValue(forKey: "tags", as: Int.self) } catch { r.mismatch = (error as? CoherenceError)?.code }
            do { _ = try ada.decodedValue(forKey: "nickname", as: String.self) } catch { r.unknown = (error as? CoherenceError)?.code }
            return r
        }
        #expect(read.ada == ["swift", "sqlite"])
        #expect(try read.adaRaw.map { try JSONDecoder().decode([String].self, from: $0) } == ["swift", "sqlite"])
        #expect(read.bob == ["go"])
        #expect(read.eve == nil && read.eveRawIsNil)
        #expect(read.mismatch == .typeMismatch && read.unknown == .unknownKey)
    }

    @Test func transformedPropertiesRoundTrip() async throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [StackNote.self])
        #expect(model.entitiesByName["StackNote"]?.attributesByName["tags"]?.type == .transformable)
        #expect(model.entitiesByName["StackNote"]?.attributesByName["place"]?.isOptional == true)
        let container = GenericPersistentContainer<ContextStrategy.Direct>(name: "Notes", managedObjectModel: model)
        container.storeLocation = dir.url
        try container.attachPersistentStore()
        let writer = container.newBackgroundContext()
        let defaults: String = try await writer.perform {
            let plain = StackNote(context: writer)
            plain.title = "plain"
            let defaults = "\(plain.tags) \(String(describing: plain.place))"
            let full = StackNote(context: writer)
            full.title = "full"
            full.tags = ["a", "b"]
            full.place = StackPlace(latitude: 59.9, longitude: 10.75)
            try writer.save()
            return defaults
        }
        #expect(defaults == "[] nil")
        let reader = container.newBackgroundContext()
        let (titles, tags, places, dynamicTags): ([String], [[String]], [StackPlace?], [String]?) = try await reader.perform {
            let notes = try reader.fetch(FetchRequest<StackNote>(sortBy: [SortDescriptor(\.title)]))
            let result = (
                notes.map(\.title), notes.map(\.tags), notes.map(\.place),
                try notes.first?.decodedValue(forKey: "tags", as: [String].self)
            )  // the dynamic API reads the same JSON
            // Change and clear, then save again.
            notes.first?.place = nil
            notes.first?.tags.append("c")
            try reader.save()
            return result
        }
        #expect(titles == ["full", "plain"])
        #expect(tags == [["a", "b"], []])
        #expect(places == [StackPlace(latitude: 59.9, longitude: 10.75), nil])
        #expect(dynamicTags == ["a", "b"])
        let again = container.newBackgroundContext()
        let full = try await again.perform {
            try again.fetch(FetchRequest<StackNote>(predicate: #Predicate { $0.title == "full" })).map {
                "\($0.tags) \(String(describing: $0.place))"
            }
        }
        #expect(full == ["[\"a\", \"b\", \"c\"] nil"])
    }

    @Test func aRegisteredTransformerIsUsed() async throws {
        let dir = try TemporaryDirectory()
        AttributeTransformers.register(StackCSVTransformer(), forName: "StackBehaviourCSV")
        let entity = EntityDescription(
            name: "Gadget",
            properties: [
                AttributeDescription(name: "label", type: .string, isOptional: true),
                AttributeDescription(name: "parts", type: .transformable, isOptional: true, valueTransformerName: "StackBehaviourCSV")
            ])
        let model = try ManagedObjectModel(entities: [entity])
        let container = GenericPersistentContainer<ContextStrategy.Direct>(name: "Gadgets", managedObjectModel: model)
        container.storeLocation = dir.url
        try container.attachPersistentStore()
        let writer = container.newBackgroundContext()
        let (stored, rejected, kept): (Data, CoherenceError.Code?, [String]?) = try await writer.perform {
            let g = try writer.insertNewObject(forEntityName: "Gadget")
            try g.setValue("clock", forKey: "label")
            try g.setValue(["gear", "spring"], forKey: "parts")
            let stored = try g.value(forKey: "parts", as: Data.self)  // stored by the transformer
            // A value the transformer rejects is an error, not silently stored in another format.
            var rejected: CoherenceError.Code?
            do { try g.setValue(42, forKey: "parts") } catch { rejected = (error as? CoherenceError)?.code }
            let kept = try g.value(forKey: "parts") as? [String]
            try writer.save()
            return (stored, rejected, kept)
        }
        #expect(stored == Data("gear,spring".utf8))
        #expect(rejected == .typeMismatch)
        #expect(kept == ["gear", "spring"])
        let reader = container.newBackgroundContext()
        let (parts, raw): ([String]?, Data?) = try await reader.perform {
            let g = try reader.fetch(FetchRequest<ManagedObject>(entityName: "Gadget")).first
            return (try g?.value(forKey: "parts") as? [String], try g?.value(forKey: "parts", as: Data.self))
        }
        #expect(parts == ["gear", "spring"])
        #expect(raw == Data("gear,spring".utf8))
    }
}
