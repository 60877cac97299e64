import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceSQLite
@testable import CoherenceStore

// MARK: A model for history

/// A note: unique `code` and a `title` kept in tombstones, `rank` with old and new values in
/// history, `body` with neither.
final class HNote: ManagedObject {
    @Attribute(.unique) var code: String = ""
    @Attribute(.preservesValueInHistoryOnDeletion) var title: String = ""
    @Attribute(.recordsValuesInHistory) var rank: Int = 0
    @Attribute var body: String = ""
    @Relationship(inverse: "notes") var folder: HFolder?
    @Relationship(inverse: "notes") var tags: Set<HTag>
}

/// Every attribute of a folder records its old and new values (entity-level flag).
final class HFolder: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var position: Int = 0
    @Relationship(inverse: "folder") var notes: Set<HNote>
    override class var recordsValuesInHistory: Bool { true }
}

final class HTag: ManagedObject {
    @Attribute var label: String = ""
    @Relationship(inverse: "tags") var notes: Set<HNote>
}

func makeHistoryModel() throws -> ManagedObjectModel {
    try ManagedObjectModel(types: [HNote.self, HFolder.self, HTag.self, Circle.self, Square.self])
}

/// History on.
let historyOptions = StoreOptions(persistentHistoryTracking: true)

/// A coordinator with one store of `type` that tracks history (SQLite: `dir/history.sqlite`;
/// PostgreSQL: the test's schema named after the file, `history`).
func makeHistoryCoordinator(
    _ type: StoreType, in dir: TemporaryDirectory, model: ManagedObjectModel? = nil, file: String = "history.sqlite"
) throws -> PersistentStoreCoordinator {
    let c = PersistentStoreCoordinator(managedObjectModel: try model ?? makeHistoryModel())
    try c.addPersistentStore(type: type, at: historyStoreURL(type, in: dir, file: file), options: historyOptions)
    return c
}

/// Where ``makeHistoryCoordinator(_:in:model:file:)`` puts its store.
func historyStoreURL(_ type: StoreType, in dir: TemporaryDirectory, file: String = "history.sqlite") throws -> URL? {
    type == .sqlite ? dir.file(file) : try dir.storeURL(type, String(file.prefix { $0 != "." }))
}

/// Every transaction of the coordinator's history, with changes.
func allHistory(_ c: PersistentStoreCoordinator) throws -> [PersistentHistoryTransaction] {
    try c.execute(.fetchHistory(after: nil)).transactions
}

extension PersistentHistoryTransaction {
    /// The change of an object, if any.
    func change(of id: ObjectID) -> PersistentHistoryChange? { changes?.first { $0.changedObjectID == id } }
}

@Suite("Persistent history: what a save records")
struct HistoryRecordingTests {
    static let types = PostgreSQLTestServer.storeTypes

    /// Inserts, updates and deletes each record one change per object, in one transaction per
    /// save, with the author, context name, store and process; updates name their properties and
    /// carry old and new values of the attributes that ask for them; deletes keep a tombstone.
    @Test(arguments: types)
    func insertsUpdatesAndDeletes(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(type, in: dir)
        let store = try #require(c.persistentStores.first)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c, name: "editor")
        context.transactionAuthor = "alice"
        let (noteID, folderID) = try context.performAndWait {
            let folder = HFolder(context: context)
            folder.name = "Inbox"
            let note = HNote(context: context)
            note.code = "n1"
            note.title = "First"
            note.rank = 1
            note.body = "hello"
            note.folder = folder
            try context.save()
            return (note.objectID, folder.objectID)
        }
        var history = try allHistory(c)
        #expect(history.count == 1)
        let first = try #require(history.first)
        #expect(first.author == "alice")
        #expect(first.contextName == "editor")
        #expect(first.storeID == store.identifier)
        #expect(first.processID == String(ProcessInfo.processInfo.processIdentifier))
        #expect(first.token.storeIdentifier == store.identifier)
        #expect(first.changes?.count == 2)
        #expect(first.change(of: noteID)?.changeType == .insert)
        #expect(first.change(of: folderID)?.changeType == .insert)
        #expect(first.change(of: noteID)?.updatedProperties == nil)

        context.transactionAuthor = "bob"
        try context.performAndWait {
            let note = try #require(context.registeredObject(for: noteID) as? HNote)
            note.rank = 5
            note.body = "changed"
            let folder = try #require(context.registeredObject(for: folderID) as? HFolder)
            folder.position = 3
            try context.save()
        }
        history = try allHistory(c)
        #expect(history.count == 2)
        let second = history[1]
        #expect(second.author == "bob")
        #expect(second.token > first.token)
        #expect(second.timestamp >= first.timestamp)
        let update = try #require(second.change(of: noteID))
        #expect(update.changeType == .update)
        #expect(update.updatedProperties == ["rank", "body"])
        // Only `rank` records its values on a note; every attribute does on a folder.
        #expect(update.oldValues == ["rank": .integer(1)])
        #expect(update.newValues == ["rank": .integer(5)])
        #expect(update.oldValue(forKey: "rank", as: Int.self) == 1)
        #expect(update.newValue(forKey: "rank", as: Int.self) == 5)
        #expect(update.newValue(forKey: "body", as: String.self) == nil)
        #expect(update.tombstone == nil)
        let folderUpdate = try #require(second.change(of: folderID))
        #expect(folderUpdate.updatedProperties == ["position"])
        #expect(folderUpdate.oldValue(forKey: "position", as: Int.self) == 0)
        #expect(folderUpdate.newValue(forKey: "position", as: Int.self) == 3)

        try context.performAndWait {
            let note = try #require(context.registeredObject(for: noteID) as? HNote)
            // An unsaved edit before the delete: the tombstone keeps the stored value.
            note.title = "edited, then deleted"
            context.delete(note)
            try context.save()
        }
        history = try allHistory(c)
        #expect(history.count == 3)
        let delete = try #require(history[2].change(of: noteID))
        #expect(delete.changeType == .delete)
        #expect(delete.updatedProperties == nil)
        // The uniqueness constraint's attribute and the one marked to be kept; nothing else.
        #expect(delete.tombstone == ["code": .text("n1"), "title": .text("First")])
        #expect(delete.tombstoneValue(forKey: "code", as: String.self) == "n1")
        #expect(delete.oldValues == nil)
        // The folder lost its note: its row did not change, so it has no change of its own.
        #expect(history[2].changes?.count == 1)
        #expect(history.map(\.transactionNumber) == [1, 2, 3])
    }

    /// A to-one change is an update of the object holding the key; a many-to-many change is an
    /// update of both objects, naming the relationship on each side.
    @Test(arguments: types)
    func relationshipChangesAreUpdates(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(type, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        let (noteID, tagID, folderID) = try context.performAndWait {
            let note = HNote(context: context)
            note.code = "n"
            let tag = HTag(context: context)
            tag.label = "t"
            let folder = HFolder(context: context)
            try context.save()
            return (note.objectID, tag.objectID, folder.objectID)
        }
        try context.performAndWait {
            let note = try #require(context.registeredObject(for: noteID) as? HNote)
            let tag = try #require(context.registeredObject(for: tagID) as? HTag)
            note.tags.insert(tag)
            note.folder = try #require(context.registeredObject(for: folderID) as? HFolder)
            try context.save()
        }
        let last = try #require(try allHistory(c).last)
        #expect(last.change(of: noteID)?.updatedProperties == ["tags", "folder"])
        #expect(last.change(of: tagID)?.updatedProperties == ["notes"])
        #expect(last.change(of: tagID)?.changeType == .update)
        #expect(last.change(of: folderID) == nil)
    }

    /// A child context's save reaches history when its parent saves to the store: one
    /// transaction, with the saving (root) context's author and name.
    @Test(arguments: types)
    func nestedSavesAreRecordedThroughTheRoot(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(type, in: dir)
        let root = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c, name: "root")
        root.transactionAuthor = "writer"
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: root, name: "child")
        child.transactionAuthor = "child author"
        try child.performAndWait {
            let note = HNote(context: child)
            note.code = "nested"
            try child.save()
        }
        #expect(try allHistory(c).isEmpty)
        try root.performAndWait { try root.save() }
        let history = try allHistory(c)
        #expect(history.count == 1)
        #expect(history.first?.author == "writer")
        #expect(history.first?.contextName == "root")
        #expect(history.first?.changes?.map(\.changeType) == [.insert])
        #expect(history.first?.changes?.first?.changedObjectID.entity.name == "HNote")
    }

    /// An entity action's saves are recorded like any other, under the action context's name.
    @Test func actionSavesAreRecorded() async throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [Item.self, Memo.self])
        let connect = GenericConnect<ContextStrategy.Direct>(name: "HistoryActions", managedObjectModel: model)
        connect.storeLocation = dir.url
        try connect.attachPersistentStore(at: dir.url, for: StoreConfiguration(options: historyOptions))
        try connect.start()
        try await connect.execute(ImportItems([["sku": "a", "title": "A"], ["sku": "b", "title": "B"]])).value
        let history = try allHistory(connect.persistentStoreCoordinator)
        #expect(history.count == 1)
        #expect(history.first?.contextName == "action.Item")
        #expect(history.first?.changes?.count == 2)
        #expect(history.first?.changes?.allSatisfy { $0.changeType == .insert } == true)
        try connect.stop()
    }

    /// A save that fails writes no history: a uniqueness conflict, a version conflict, and a save
    /// whose second store refuses after the first store wrote its part (both roll back).
    @Test(arguments: types)
    func failedSavesWriteNoHistory(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(type, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        let noteID = try context.performAndWait {
            let note = HNote(context: context)
            note.code = "taken"
            try context.save()
            return note.objectID
        }
        #expect(try allHistory(c).count == 1)
        // Uniqueness: another note with the same code.
        try context.performAndWait {
            let twin = HNote(context: context)
            twin.code = "taken"
            #expect(throws: CoherenceError.self) { try context.save() }
            context.rollback()
        }
        #expect(try allHistory(c).count == 1)
        // Version: another context changed the note since this one loaded it.
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        try other.performAndWait {
            let note = try #require(try other.existingObject(with: noteID) as? HNote)
            note.rank = 7
            try other.save()
        }
        #expect(try allHistory(c).count == 2)
        try context.performAndWait {
            let note = try #require(context.registeredObject(for: noteID) as? HNote)
            note.rank = 8
            #expect(throws: CoherenceError.self) { try context.save() }
        }
        #expect(try allHistory(c).count == 2)
        #expect(try c.currentPersistentHistoryToken()?.transactionNumber == 2)
    }

    /// Writers of several coordinators saving at once (as processes and server instances do)
    /// each record their transaction under a number of its own: the numbers follow one another,
    /// none repeated or skipped, and each writer's tokens grow with its saves. (Each writer
    /// updates a note of its own: no save waits for another's rows or keys.)
    @Test(arguments: storedTypes)
    func concurrentWritersNeverShareANumber(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let writers = 4, saves = 10
        let coordinators = try (0..<writers).map { _ in try makeHistoryCoordinator(type, in: dir) }
        let setup = try saveNotes(coordinators[0], authors: (0..<writers).map { "writer \($0)" })
        let notes = setup.compactMap { $0.changes?.first?.changedObjectID.uriRepresentation() }
        #expect(notes.count == writers)
        let numbers = LockedValue<[[Int64]]>(Array(repeating: [], count: writers))
        let failures = LockedValue<[String]>([])
        DispatchQueue.concurrentPerform(iterations: writers) { w in
            let c = coordinators[w]
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
            context.transactionAuthor = "writer \(w)"
            for n in 1...saves {
                do {
                    try context.performAndWait {
                        guard let id = c.managedObjectID(forURIRepresentation: notes[w]),
                            let note = try context.existingObject(with: id) as? HNote
                        else { throw CoherenceError(.invalidRequest, "writer \(w) has no note") }
                        note.rank = n
                        try context.save()
                    }
                    let token = c.persistentStores.first?.engine.lastCommittedHistoryToken
                    numbers.withLock { $0[w].append(token?.transactionNumber ?? -1) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        let first = Int64(writers) + 1, last = Int64(writers + writers * saves)
        let history = try allHistory(coordinators[0])
        #expect(history.map(\.transactionNumber) == Array(1...last))
        #expect(history.allSatisfy { $0.changes?.count == 1 })
        let byWriter = numbers.withLock { $0 }
        #expect(byWriter.flatMap { $0 }.sorted() == Array(first...last))
        for (w, list) in byWriter.enumerated() {
            #expect(list == list.sorted())
            #expect(
                Set(history.filter { $0.author == "writer \(w)" && $0.transactionNumber >= first }.map(\.transactionNumber)) == Set(list))
        }
    }

    /// One save over two stores: the first store's part (with its history) is rolled back when
    /// the second store refuses its part, so neither records a transaction; a save both accept
    /// records one transaction in each.
    @Test(arguments: storedTypes)
    func aSaveOverTwoStoresRecordsInBothOrNeither(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(
            types: [HNote.self, HFolder.self, HTag.self, Circle.self, Square.self],
            configurations: ["Notes": ["HNote", "HFolder", "HTag"], "Shapes": ["Shape", "Circle", "Square"]])
        let c = PersistentStoreCoordinator(managedObjectModel: model)
        let notes = try c.addPersistentStore(
            type: type, configuration: "Notes", at: historyStoreURL(type, in: dir, file: "notes.sqlite"), options: historyOptions)
        let shapes = try c.addPersistentStore(
            type: type, configuration: "Shapes", at: historyStoreURL(type, in: dir, file: "shapes.sqlite"), options: historyOptions)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        try context.performAndWait {
            HNote(context: context).code = "a"
            Circle(context: context).radius = 1
            try context.save()
        }
        let stores = try allHistory(c).map(\.storeID)
        #expect(Set(stores) == [notes.identifier, shapes.identifier] && stores.count == 2)
        // The shapes store fails its part: its table is gone.
        if let server = shapes.engine as? PostgreSQLStore {
            try server.writerConnection().execute("DROP TABLE \"Shape\"")
        } else {
            try #require(shapes.engine as? SQLiteStore).writerConnectionForSave().execute("DROP TABLE \"Shape\"")
        }
        try context.performAndWait {
            HNote(context: context).code = "b"
            Circle(context: context).radius = 2
            #expect(throws: CoherenceError.self) { try context.save() }
        }
        var request = PersistentHistoryChangeRequest.fetchHistory(after: nil)
        request.affectedStores = [notes]
        #expect(try c.execute(request).transactions.count == 1)
        // The notes store has its first note only: its part was rolled back with its history.
        #expect(try c.count(for: FetchRequest<HNote>()) == 1)
    }

    /// A batch request records its changes with one call inside its own write transaction: the
    /// transaction is kept when it commits (and becomes the last committed token) and dropped
    /// when it rolls back.
    @Test func aWriteTransactionRecordsWithOneCall() throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(.sqlite, in: dir)
        let id = try #require(try saveNotes(c, authors: ["app"]).first?.changes?.first?.changedObjectID)
        let engine = try #require(c.persistentStores.first?.engine as? SQLiteStore)
        let record = HistoryTransactionRecord(
            author: "batch", contextName: "batch update",
            changes: [HistoryChangeRecord(objectID: id, type: .update, updatedPropertyNames: ["rank", "nope", "body"])])
        try engine.writerConnectionForSave().execute("BEGIN IMMEDIATE")
        try engine.recordHistory(record)
        engine.rollbackSave()
        #expect(try allHistory(c).count == 1)
        #expect(engine.lastCommittedHistoryToken?.transactionNumber == 1)
        try engine.writerConnectionForSave().execute("BEGIN IMMEDIATE")
        try engine.recordHistory(record)
        try engine.commitSave()
        let last = try #require(try allHistory(c).last)
        #expect(last.transactionNumber == 2 && last.author == "batch" && last.contextName == "batch update")
        #expect(last.changes?.first?.updatedProperties == ["rank", "body"])
        #expect(engine.lastCommittedHistoryToken == last.token)
    }

    /// With the option off, a store has no history tables and records nothing; with it on, a
    /// store's options say so, and a container passes them on.
    @Test func theOptionTurnsHistoryOn() throws {
        let dir = try TemporaryDirectory()
        let c = PersistentStoreCoordinator(managedObjectModel: try makeHistoryModel())
        let plain = try c.addPersistentStore(type: .sqlite, at: dir.file("plain.sqlite"))
        #expect(!plain.options.persistentHistoryTracking)
        let engine = try #require(plain.engine as? SQLiteStore)
        let tables = try engine.writerConnectionForSave().prepare(HistorySQL.tableExists).rows { $0.int64(0) }
        #expect(tables == [0])
        #expect(try c.currentPersistentHistoryToken() == nil)
        #expect(throws: CoherenceError.self) { try c.execute(.fetchHistory(after: nil)) }

        // (Remote-change notifications stay off here: a watcher's inotify descriptor would upset
        // RemoteChangeTests, which count them; aContainerPassesBothOptionsOn is there.)
        let options = StoreOptions(persistentHistoryTracking: true)
        #expect(options.description.contains("persistentHistoryTracking: true"))
        let container = GenericConnect<ContextStrategy.Mixed>(name: "Tracked", managedObjectModel: try makeHistoryModel())
        let store = try container.attachPersistentStore(at: dir.url, for: StoreConfiguration(options: options))
        #expect(store.options.persistentHistoryTracking)
        #expect(store.engine.tracksHistory)
        #expect(try container.persistentStoreCoordinator.currentPersistentHistoryToken()?.transactionNumber == 0)
    }
}
