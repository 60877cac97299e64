import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Saves one note per author (in order), each its own transaction; returns the transactions.
@discardableResult
func saveNotes(_ c: PersistentStoreCoordinator, authors: [String?], contextName: String? = nil) throws -> [PersistentHistoryTransaction] {
    let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c, name: contextName)
    let before = try c.currentPersistentHistoryToken()
    try context.performAndWait {
        for (n, author) in authors.enumerated() {
            context.transactionAuthor = author
            HNote(context: context).code = "\(author ?? "none")-\(n)-\(UUID().uuidString)"
            try context.save()
        }
    }
    return try c.execute(.fetchHistory(after: before)).transactions
}

@Suite("Persistent history: reading and trimming")
struct HistoryReadingTests {
    static let types = PostgreSQLTestServer.storeTypes

    /// Fetching after a token, a transaction or a date returns the later transactions, oldest
    /// first; deleting before them removes the earlier ones (not the token's own).
    @Test(arguments: types)
    func fetchAndDeleteByTokenTransactionAndDate(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(type, in: dir)
        let t = try saveNotes(c, authors: ["a", "b", "c", "d", "e"])
        #expect(t.map(\.transactionNumber) == [1, 2, 3, 4, 5])
        #expect(try c.execute(.fetchHistory(after: t[1].token)).transactions.map(\.transactionNumber) == [3, 4, 5])
        #expect(try c.execute(.fetchHistory(after: t[3])).transactions.map(\.transactionNumber) == [5])
        #expect(try c.execute(.fetchHistory(after: t[0])).count == 4)
        #expect(try c.execute(.fetchHistory(after: t[4].token)).transactions.isEmpty)
        // Dates: strictly after; every transaction is after the distant past.
        #expect(try c.execute(.fetchHistory(after: Date.distantPast)).transactions.count == 5)
        #expect(try c.execute(.fetchHistory(after: t[4].timestamp)).transactions.isEmpty)

        var deleted = try c.execute(.deleteHistory(before: t[1].token))
        #expect(deleted.count == 1)
        #expect(deleted.resultType == .statusOnly)
        #expect(try allHistory(c).map(\.transactionNumber) == [2, 3, 4, 5])
        deleted = try c.execute(.deleteHistory(before: t[2]))
        #expect(deleted.count == 1)
        #expect(try allHistory(c).map(\.transactionNumber) == [3, 4, 5])
        // Before a date: the transactions stamped strictly earlier.
        try c.execute(.deleteHistory(before: t[3].timestamp))
        let kept = t[2...].filter { $0.timestamp >= t[3].timestamp }.map(\.transactionNumber)
        #expect(kept.contains(4) && kept.contains(5))
        #expect(try allHistory(c).map(\.transactionNumber) == kept)
        #expect(try c.execute(.deleteHistory(before: Date.distantFuture)).count == kept.count)
        #expect(try allHistory(c).isEmpty)
        // Numbers go on where they were, history or not.
        let next = try saveNotes(c, authors: ["f"])
        #expect(next.map(\.transactionNumber) == [6])
        #expect(try c.execute(.deleteHistory(before: nil)).count == 1)
        #expect(try c.currentPersistentHistoryToken()?.transactionNumber == 6)
    }

    /// Filters select transactions by author (included or excluded), context name and entity
    /// (with its sub-entities), and a fetch limit; result types choose what comes back.
    @Test(arguments: types)
    func filtersAndResultTypes(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(type, in: dir)
        try saveNotes(c, authors: ["app", "sync", nil, "app"], contextName: "main")
        let shapes = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c, name: "shapes")
        shapes.transactionAuthor = "sync"
        try shapes.performAndWait {
            Circle(context: shapes).radius = 1
            Square(context: shapes).side = 2
            HNote(context: shapes).code = "with shapes"
            try shapes.save()
        }
        func numbers(_ configure: (inout PersistentHistoryChangeRequest) -> Void) throws -> [Int64] {
            var request = PersistentHistoryChangeRequest.fetchHistory(after: nil)
            configure(&request)
            return try c.execute(request).transactions.map(\.transactionNumber)
        }
        #expect(try numbers { $0.authors = ["app"] } == [1, 4])
        #expect(try numbers { $0.authors = ["app", "sync"] } == [1, 2, 4, 5])
        #expect(try numbers { $0.authors = [] } == [])
        // Excluding keeps transactions without an author.
        #expect(try numbers { $0.excludedAuthors = ["app"] } == [2, 3, 5])
        #expect(try numbers { $0.contextNames = ["shapes"] } == [5])
        #expect(
            try numbers {
                $0.contextNames = ["main"]; $0.excludedAuthors = ["sync"]
            } == [1, 3, 4])
        #expect(try numbers { $0.fetchLimit = 2 } == [1, 2])
        #expect(
            try numbers {
                $0.fetchLimit = 2; $0.authors = ["sync"]
            } == [2, 5])
        // By entity: only transactions with such changes, and only those changes.
        var request = PersistentHistoryChangeRequest.fetchHistory(after: nil)
        request.entityNames = ["Shape"]
        var result = try c.execute(request)
        #expect(result.transactions.map(\.transactionNumber) == [5])
        #expect(Set(result.transactions.first?.changes?.map(\.changedObjectID.entity.name) ?? []) == ["Circle", "Square"])
        request.entityNames = ["Square", "HFolder"]
        result = try c.execute(request)
        #expect(result.transactions.first?.changes?.map(\.changedObjectID.entity.name) == ["Square"])
        request.entityNames = ["HNote"]
        #expect(try c.execute(request).transactions.count == 5)

        request = .fetchHistory(after: nil)
        request.resultType = .transactionsOnly
        result = try c.execute(request)
        #expect(result.transactions.count == 5 && result.transactions.allSatisfy { $0.changes == nil })
        #expect(result.transactions.last?.author == "sync")
        request.resultType = .count
        request.excludedAuthors = ["sync"]
        result = try c.execute(request)
        #expect(result.count == 3 && result.transactions.isEmpty)
        request.resultType = .statusOnly
        #expect(try c.execute(request).transactions.isEmpty)

        // Requests that make no sense.
        request = .fetchHistory(after: nil)
        request.entityNames = ["Nope"]
        #expect(throws: CoherenceError.self) { try c.execute(request) }
        request = .fetchHistory(after: nil)
        request.fetchLimit = -1
        #expect(throws: CoherenceError.self) { try c.execute(request) }
        var delete = PersistentHistoryChangeRequest.deleteHistory(before: Date())
        delete.authors = ["app"]
        do {
            try c.execute(delete)
            Issue.record("a delete with filters was accepted")
        } catch {
            #expect(error.code == .invalidRequest)
        }
        #expect(try allHistory(c).count == 5)
    }

    /// Fetching after a token whose following transactions were deleted fails with
    /// `historyTokenExpired`, whose message says how to recover; fetching from the oldest
    /// remaining transaction works, and so does a token that is still whole.
    @Test(arguments: types)
    func expiredTokens(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(type, in: dir)
        let t = try saveNotes(c, authors: ["a", "b", "c", "d"])
        try c.execute(.deleteHistory(before: t[2].token))
        do {
            try c.execute(.fetchHistory(after: t[0].token))
            Issue.record("an expired token was accepted")
        } catch {
            #expect(error.code == .historyTokenExpired)
            #expect(error.message.contains("fetchHistory(after: nil)"))
            #expect(error.message.contains("oldest remaining transaction"))
            #expect(error.message.contains("transaction 1"))
        }
        #expect(throws: CoherenceError.self) { try c.execute(.fetchHistory(after: t[0])) }
        // The last deleted transaction's token is whole: nothing after it is gone.
        #expect(try c.execute(.fetchHistory(after: t[1].token)).transactions.map(\.transactionNumber) == [3, 4])
        #expect(try allHistory(c).map(\.transactionNumber) == [3, 4])
        // A token newer than the history (a store replaced by an older copy) is expired too.
        let future = PersistentHistoryToken(storeIdentifier: t[0].storeID, transactionNumber: 99)
        do {
            try c.execute(.fetchHistory(after: future))
            Issue.record("a token from the future was accepted")
        } catch {
            #expect(error.code == .historyTokenExpired)
        }
        // Counting checks the token too.
        var count = PersistentHistoryChangeRequest.fetchHistory(after: t[0].token)
        count.resultType = .count
        #expect(throws: CoherenceError.self) { try c.execute(count) }
    }

    /// A token names its store: a token of another store, or of a store that is not among the
    /// request's stores, is refused with `invalidHistoryToken`. Tokens are Codable and ordered.
    @Test(arguments: storedTypes)
    func tokensBelongToOneStore(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let a = try makeHistoryCoordinator(type, in: dir, file: "a.sqlite")
        let b = try makeHistoryCoordinator(type, in: dir, file: "b.sqlite")
        let ta = try saveNotes(a, authors: ["x", "y"])
        try saveNotes(b, authors: ["z"])
        for request in [PersistentHistoryChangeRequest.fetchHistory(after: ta[0].token), .deleteHistory(before: ta[0].token)] {
            do {
                try b.execute(request)
                Issue.record("a token of another store was accepted")
            } catch {
                #expect(error.code == .invalidHistoryToken)
                #expect(error.message.contains(ta[0].storeID.uuidString))
            }
        }
        #expect(try allHistory(b).count == 1)
        // Limited to other stores.
        let memory = try a.addPersistentStore(type: .inMemory, configuration: nil, options: historyOptions)
        var request = PersistentHistoryChangeRequest.fetchHistory(after: ta[0].token)
        request.affectedStores = [memory]
        #expect(throws: CoherenceError.self) { try a.execute(request) }
        // Two tracked stores: ask for one.
        #expect(throws: CoherenceError.self) { try a.currentPersistentHistoryToken() }
        let sqliteStore = try #require(a.persistentStores.first)
        #expect(try a.currentPersistentHistoryToken(fromStores: [sqliteStore]) == ta[1].token)
        #expect(try a.currentPersistentHistoryToken(fromStores: [memory])?.transactionNumber == 0)

        let data = try JSONEncoder().encode(ta[1].token)
        let decoded = try JSONDecoder().decode(PersistentHistoryToken.self, from: data)
        #expect(decoded == ta[1].token)
        #expect(ta[0].token < ta[1].token)
        #expect(try a.execute(.fetchHistory(after: decoded)).transactions.isEmpty)
        #expect(try a.execute(.fetchHistory(after: ta[0].token)).transactions.map(\.token) == [decoded])
    }

    /// History is in the store's file: it survives closing and reopening, numbering goes on
    /// after it, and numbers are not reused after the history was deleted.
    @Test(arguments: storedTypes)
    func historySurvivesCloseAndReopen(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        var tokens: [PersistentHistoryToken] = []
        do {
            let c = try makeHistoryCoordinator(type, in: dir)
            tokens = try saveNotes(c, authors: ["a", "b"]).map(\.token)
            #expect(c.persistentStores.first?.engine.lastCommittedHistoryToken == tokens.last)
        }
        do {
            let c = try makeHistoryCoordinator(type, in: dir)
            let history = try allHistory(c)
            #expect(history.map(\.token) == tokens)
            #expect(history.map(\.author) == ["a", "b"])
            #expect(history.allSatisfy { $0.changes?.count == 1 && $0.changes?.first?.changeType == .insert })
            #expect(c.persistentStores.first?.engine.lastCommittedHistoryToken == nil)
            try c.execute(.deleteHistory(before: nil))
        }
        let c = try makeHistoryCoordinator(type, in: dir)
        #expect(try allHistory(c).isEmpty)
        #expect(try c.currentPersistentHistoryToken()?.transactionNumber == 2)
        #expect(try saveNotes(c, authors: ["c"]).map(\.transactionNumber) == [3])
        #expect(throws: CoherenceError.self) { try c.execute(.fetchHistory(after: tokens[0])) }
    }

    /// A store that recorded history, opened without the option, is refused with
    /// `historyTrackingRequired` and left as it was: opened with the option again, its history
    /// is all there.
    @Test(arguments: storedTypes)
    func aStoreWithHistoryRefusesToOpenWithoutIt(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let file = try historyStoreURL(type, in: dir)
        var tokens: [PersistentHistoryToken] = []
        do {
            let c = try makeHistoryCoordinator(type, in: dir)
            tokens = try saveNotes(c, authors: ["a", "b"]).map(\.token)
        }
        let bytes = type == .sqlite ? try file.map { try Data(contentsOf: $0) } : nil
        let c = PersistentStoreCoordinator(managedObjectModel: try makeHistoryModel())
        do {
            try c.addPersistentStore(type: type, at: file)
            Issue.record("a store with history opened without it")
        } catch {
            #expect(error.code == .historyTrackingRequired)
            #expect(error.message.contains("persistentHistoryTracking"))
        }
        #expect(c.persistentStores.isEmpty)
        if let file, let bytes { #expect(try Data(contentsOf: file) == bytes) }
        try c.addPersistentStore(type: type, at: file, options: historyOptions)
        #expect(try allHistory(c).map(\.token) == tokens)
    }

    /// A context on a new store of `type` in `dir` opened without history, after saving a note
    /// with code `code`.
    func contextWithoutHistory(_ type: StoreType, in dir: TemporaryDirectory, saving code: String) throws -> ManagedObjectContext {
        let c = PersistentStoreCoordinator(managedObjectModel: try makeHistoryModel())
        try c.addPersistentStore(type: type, at: historyStoreURL(type, in: dir))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        try context.performAndWait {
            HNote(context: context).code = code
            try context.save()
        }
        return context
    }

    /// A store without history that is opened with the option starts recording from then on.
    @Test(arguments: storedTypes)
    func historyStartsWhenTheOptionIsTurnedOn(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        do { _ = try contextWithoutHistory(type, in: dir, saving: "before") }
        let c = try makeHistoryCoordinator(type, in: dir)
        #expect(try allHistory(c).isEmpty)
        #expect(try saveNotes(c, authors: ["after"]).map(\.transactionNumber) == [1])
    }

    /// A store opened without history stops writing once another coordinator (another process,
    /// say) turns history on for it: its saves and batch requests fail with
    /// `.historyTrackingRequired` and write nothing, so no change is missing from the history
    /// the others read; the other coordinator's saves are recorded.
    @Test(arguments: storedTypes)
    func aStoreWithoutHistoryStopsWritingOnceAnotherTurnsItOn(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try contextWithoutHistory(type, in: dir, saving: "before")
        let plain = context.persistentStoreCoordinator
        let tracked = try makeHistoryCoordinator(type, in: dir)
        let refused = #expect(throws: CoherenceError.self) {
            try context.performAndWait {
                HNote(context: context).code = "after"
                try context.save()
            }
        }
        #expect(refused?.code == .historyTrackingRequired)
        #expect(refused?.message.contains("persistentHistoryTracking") == true)
        let batch = #expect(throws: CoherenceError.self) {
            try plain.execute(BatchInsertRequest<HNote>(objects: [["code": "batch", "rank": 1]]))
        }
        #expect(batch?.code == .historyTrackingRequired)
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: tracked)
        let codes = try reader.performAndWait { try reader.fetch(FetchRequest<HNote>()).map(\.code) }
        #expect(codes == ["before"])
        #expect(try allHistory(tracked).isEmpty)
        #expect(try saveNotes(tracked, authors: ["tracked"]).count == 1)
    }

    /// The same across processes: another process opens the file with history on and saves;
    /// this process's store, opened without history, then refuses to save, and the file's
    /// history holds exactly the other process's transaction.
    @Test func anotherProcessTurningHistoryOnStopsThisProcessWriting() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("notes.sqlite")
        let plain = try remoteCoordinator(url, notifications: false, history: false)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: plain)
        try context.performAndWait {
            RemoteNote(context: context).author = "plain"
            try context.save()
        }
        let child = try WriterProcess(store: url, author: "child", ["--inserts", "1", "--history"])
        #expect(await child.waitForLine("DONE"))
        #expect(await child.finish().status == 0)
        let refused = #expect(throws: CoherenceError.self) {
            try context.performAndWait {
                RemoteNote(context: context).author = "plain again"
                try context.save()
            }
        }
        #expect(refused?.code == .historyTrackingRequired)
        let reopened = try remoteCoordinator(url, notifications: false, history: true)
        let transactions = try allHistory(reopened)
        #expect(transactions.map { $0.author } == ["child"])
        #expect(try reopened.fetchObjectIDs(FetchRequest<RemoteNote>()).count == 2)
    }

    /// A transaction's notification catches a context up: a context of another coordinator on
    /// the same file merges it and sees the other writer's changes (its cached rows are dropped).
    @Test(arguments: storedTypes)
    func aContextCatchesUpFromHistory(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let reader = try makeHistoryCoordinator(type, in: dir)
        let writer = try makeHistoryCoordinator(type, in: dir)
        let view = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: reader)
        let writing = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: writer, name: "importer")
        writing.transactionAuthor = "importer"
        let (keptID, goneID) = try writing.performAndWait {
            let kept = HNote(context: writing)
            kept.code = "kept"
            kept.rank = 1
            let gone = HNote(context: writing)
            gone.code = "gone"
            try writing.save()
            return (kept.objectID, gone.objectID)
        }
        let start = try reader.currentPersistentHistoryToken()
        // The same objects as the reader's model knows them.
        let keptHere = try #require(reader.managedObjectID(forURIRepresentation: keptID.uriRepresentation()))
        let goneHere = try #require(reader.managedObjectID(forURIRepresentation: goneID.uriRepresentation()))
        // The view has both notes loaded (and the reader's row cache has their rows).
        let kept = try view.performAndWait {
            let kept = try #require(try view.existingObject(with: keptHere) as? HNote)
            let gone = try #require(try view.existingObject(with: goneHere) as? HNote)
            #expect(kept.rank == 1 && gone.code == "gone")
            return kept
        }
        try writing.performAndWait {
            let k = try #require(writing.registeredObject(for: keptID) as? HNote)
            k.rank = 2
            let n = HNote(context: writing)
            n.code = "new"
            writing.delete(try #require(writing.registeredObject(for: goneID)))
            try writing.save()
        }
        var request = PersistentHistoryChangeRequest.fetchHistory(after: start)
        request.excludedAuthors = ["view"]
        let transactions = try view.execute(request).transactions
        #expect(transactions.count == 1)
        let note = try #require(transactions.first).objectIDNotification()
        #expect(note.name == ManagedObjectContext.didSaveObjectIDsNotification)
        #expect(note.userInfo?[ManagedObjectContext.NotificationKey.historyToken] as? PersistentHistoryToken == transactions.first?.token)
        #expect((note.userInfo?[ManagedObjectContext.NotificationKey.insertedObjectIDs] as? Set<ObjectID>)?.count == 1)
        let count = try view.performAndWait { () throws(CoherenceError) -> Int in
            view.mergeChanges(fromContextDidSave: note)
            #expect(kept.rank == 2)
            #expect(view.registeredObject(for: goneHere) == nil)
            return try view.count(for: FetchRequest<HNote>())
        }
        #expect(count == 2)
    }

    /// A damaged history row is reported as `corruptRow`, naming the transaction (never a crash).
    @Test func damagedHistoryIsATypedError() throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(.sqlite, in: dir)
        try saveNotes(c, authors: ["a"])
        let engine = try #require(c.persistentStores.first?.engine as? SQLiteStore)
        for blob in ["x'02'", "x'01ff'", "x'0101054e6f706521'", "x'01010548" + "4e6f7465" + "0001'"] {
            try engine.writerConnectionForSave().execute("UPDATE Z_HISTORYTRANSACTION SET Z_CHANGES = \(blob)")
            do {
                try c.execute(.fetchHistory(after: nil))
                Issue.record("damaged history \(blob) was read")
            } catch {
                #expect(error.code == .corruptRow)
                #expect(error.message.contains("History transaction 1"))
            }
        }
        // Without changes, the transaction itself is still readable.
        var request = PersistentHistoryChangeRequest.fetchHistory(after: nil)
        request.resultType = .transactionsOnly
        #expect(try c.execute(request).transactions.first?.author == "a")
    }
}
