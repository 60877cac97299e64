import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Batch requests record persistent history in their own transaction, on both stores.
@Suite("Batch requests: history")
struct BatchHistoryTests {
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func batchRequestsRecordHistory(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(type, in: dir)
        var insert = BatchInsertRequest<HNote>(objects: [["code": "a", "rank": 1], ["code": "b", "rank": 2]])
        insert.resultType = .objectIDs
        let inserted = try c.execute(insert)
        var update = BatchUpdateRequest<HNote>(predicate: #Predicate { $0.rank > 1 }, propertiesToUpdate: ["body": "x"])
        update.resultType = .objectIDs
        let updated = try c.execute(update)
        var delete = BatchDeleteRequest<HNote>(fetchRequest: FetchRequest<HNote>(predicate: #Predicate { $0.code == "a" }))
        delete.resultType = .objectIDs
        let deleted = try c.execute(delete)

        let history = try allHistory(c)
        #expect(history.count == 3)
        let kinds = history.map { t in Set((t.changes ?? []).map(\.changeType)) }
        #expect(kinds == [[.insert], [.update], [.delete]])
        #expect(Set((history[0].changes ?? []).map(\.changedObjectID)) == inserted.insertedObjectIDs)
        #expect(history[1].changes?.first?.updatedProperties == ["body"])
        #expect(Set((history[1].changes ?? []).map(\.changedObjectID)) == updated.updatedObjectIDs)
        #expect(Set((history[2].changes ?? []).map(\.changedObjectID)) == deleted.deletedObjectIDs)
    }
}

// MARK: Author, context name and tombstones

/// A shelf cascades to its books; its unique name is kept in tombstones.
final class BHShelf: ManagedObject {
    @Attribute(.unique) var name: String = ""
    @Relationship(inverse: "shelf", deleteRule: .cascade) var books: Set<BHBook>
}

/// A book: unique `isbn` and a `title` kept in tombstones, `note` not.
final class BHBook: ManagedObject {
    @Attribute(.unique) var isbn: String = ""
    @Attribute(.preservesValueInHistoryOnDeletion) var title: String = ""
    @Attribute var note: String = ""
    @Relationship(inverse: "books") var shelf: BHShelf?
}

@Suite("Batch requests: history author, context name, tombstones and values")
struct BatchHistoryOriginTests {
    /// A batch request run through a context records the context's author and name, as its save
    /// would; through the coordinator it records neither. Author filters see them.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func contextRequestsRecordAuthorAndName(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(type, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c, name: "importer")
        context.transactionAuthor = "sync"
        try context.performAndWait {
            try context.execute(BatchInsertRequest<HNote>(objects: [["code": "a", "rank": 1], ["code": "b", "rank": 2]]))
            try context.execute(BatchUpdateRequest<HNote>(predicate: #Predicate { $0.rank > 1 }, propertiesToUpdate: ["body": "x"]))
            try context.execute(
                BatchDeleteRequest<HNote>(fetchRequest: FetchRequest<HNote>(predicate: #Predicate { $0.code == "a" })))
        }
        try c.execute(BatchInsertRequest<HNote>(objects: [["code": "c", "rank": 3]]))
        try c.execute(BatchUpdateRequest<HNote>(predicate: #Predicate { $0.rank > 2 }, propertiesToUpdate: ["body": "y"]))
        try c.execute(BatchDeleteRequest<HNote>(fetchRequest: FetchRequest<HNote>(predicate: #Predicate { $0.code == "c" })))

        let history = try allHistory(c)
        #expect(history.count == 6)
        #expect(history.map(\.author) == ["sync", "sync", "sync", nil, nil, nil])
        #expect(history.map(\.contextName) == ["importer", "importer", "importer", nil, nil, nil])
        #expect(history.allSatisfy { ($0.changes ?? []).count > 0 })

        var others = PersistentHistoryChangeRequest.fetchHistory(after: nil)
        others.excludedAuthors = ["sync"]
        #expect(try c.execute(others).transactions.map(\.token) == history.suffix(3).map(\.token))
        var importer = PersistentHistoryChangeRequest.fetchHistory(after: nil)
        importer.contextNames = ["importer"]
        #expect(try c.execute(importer).transactions.map(\.token) == history.prefix(3).map(\.token))
    }

    /// A batch delete keeps the tombstones a context's delete keeps — uniqueness attributes and
    /// attributes marked to keep their value — for the rows it matched, the rows a cascade rule
    /// reached, and rows deleted by ID; attributes not marked are left out.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func batchDeletesKeepTombstones(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(type, in: dir, model: try ManagedObjectModel(types: [BHShelf.self, BHBook.self]))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c, name: "editor")
        let ids = try context.performAndWait {
            var books: [String: ObjectID] = [:]
            var shelves: [String: ObjectID] = [:]
            for (shelfName, isbns) in [("A", ["1", "2"]), ("B", ["3", "4"])] {
                let shelf = BHShelf(context: context)
                shelf.name = shelfName
                for isbn in isbns {
                    let book = BHBook(context: context)
                    book.isbn = isbn
                    book.title = "Title \(isbn)"
                    book.note = "note \(isbn)"
                    book.shelf = shelf
                }
            }
            try context.save()
            for o in context.registeredObjects {
                if let b = o as? BHBook { books[b.isbn] = b.objectID }
                if let s = o as? BHShelf { shelves[s.name] = s.objectID }
            }
            return (books: books, shelves: shelves)
        }
        let shelfA = try #require(ids.shelves["A"])
        let book = try ["1", "2", "3", "4"].map { isbn in try #require(ids.books[isbn]) }

        // By fetch: shelf A, and its books through the cascade rule.
        try context.performAndWait {
            try context.execute(
                BatchDeleteRequest<BHShelf>(fetchRequest: FetchRequest<BHShelf>(predicate: #Predicate { $0.name == "A" })))
        }
        // By ID: book 3.
        try c.execute(BatchDeleteRequest(objectIDs: [book[2]]))
        // A context's delete of book 4, to compare with.
        try context.performAndWait {
            context.delete(try context.existingObject(with: book[3]))
            try context.save()
        }

        let history = try allHistory(c)
        #expect(history.count == 4)
        let byFetch = history[1], byID = history[2], saved = history[3]
        let shelf = try #require(byFetch.change(of: shelfA))
        #expect(shelf.changeType == .delete)
        #expect(shelf.tombstone == ["name": .text("A")])
        for (n, isbn) in ["1", "2"].enumerated() {
            let change = try #require(byFetch.change(of: book[n]))
            #expect(change.changeType == .delete)
            #expect(change.tombstone == ["isbn": .text(isbn), "title": .text("Title \(isbn)")])
            #expect(change.tombstoneValue(forKey: "note", as: String.self) == nil)
        }
        let three = try #require(byID.change(of: book[2]))
        #expect(three.tombstone == ["isbn": .text("3"), "title": .text("Title 3")])
        // Exactly what a context's delete records for the same kind of row.
        let four = try #require(saved.change(of: book[3]))
        #expect(four.tombstone == ["isbn": .text("4"), "title": .text("Title 4")])
    }

    /// A batch update records the old and new values of the attributes that ask for them (one
    /// by one, or a whole entity), as a context's save does; the others are named only. An
    /// upsert that updated a stored row records them too (once per object, from its first old
    /// value to its last new one).
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func updatesRecordOldAndNewValues(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(type, in: dir)
        try c.execute(BatchInsertRequest<HNote>(objects: [["code": "a", "rank": 1], ["code": "b", "rank": 2]]))
        try c.execute(BatchInsertRequest<HFolder>(objects: [["name": "Inbox", "position": 1]]))

        try c.execute(BatchUpdateRequest<HNote>(predicate: #Predicate { $0.rank > 0 }, propertiesToUpdate: ["rank": 7, "body": "x"]))
        try c.execute(BatchUpdateRequest<HFolder>(propertiesToUpdate: ["position": 4]))
        var upsert = BatchInsertRequest<HNote>(objects: [["code": "a", "rank": 9]])
        upsert.mergePolicy = .mergeByPropertyObjectTrump
        try c.execute(upsert)
        // Two rows meeting one stored row: one change, from the first old value to the last new one.
        var twice = BatchInsertRequest<HNote>(objects: [["code": "b", "rank": 5], ["code": "b", "rank": 6]])
        twice.mergePolicy = .mergeByPropertyObjectTrump
        try c.execute(twice)

        let history = try allHistory(c)
        #expect(history.count == 6)
        let notes = history[2].changes ?? []
        #expect(notes.count == 2)
        #expect(Set(notes.compactMap { $0.oldValue(forKey: "rank", as: Int.self) }) == [1, 2])
        #expect(notes.allSatisfy { $0.newValues == ["rank": .integer(7)] && $0.updatedProperties == ["rank", "body"] })
        let folder = try #require(history[3].changes?.first)
        #expect(folder.oldValues == ["position": .integer(1)])
        #expect(folder.newValues == ["position": .integer(4)])
        let upserted = try #require(history[4].changes?.first)
        #expect(upserted.changeType == .update)
        #expect(upserted.oldValue(forKey: "rank", as: Int.self) == 7)
        #expect(upserted.newValue(forKey: "rank", as: Int.self) == 9)
        let coalesced = try #require(history[5].changes)
        #expect(coalesced.count == 1)
        #expect(coalesced.first?.oldValues == ["rank": .integer(7)])
        #expect(coalesced.first?.newValues == ["rank": .integer(6)])
    }
}
