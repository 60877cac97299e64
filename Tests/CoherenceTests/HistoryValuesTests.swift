import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// What history records for saves that resolved a conflict, and for edits undone before saving.
@Suite struct HistoryValuesTests {
    static func insertNote(_ c: PersistentStoreCoordinator) throws -> ObjectID {
        let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        return try writer.performAndWait {
            let note = HNote(context: writer)
            note.code = "n1"
            note.title = "First"
            note.rank = 1
            try writer.save()
            return note.objectID
        }
    }

    /// "The old value is the one the saving context had loaded, which optimistic locking
    /// guarantees was the stored one": a save whose conflict a merge policy resolved records as
    /// old value what the store held (another context's), not what the context loaded first.
    @Test(arguments: [MergePolicy.mergeByPropertyObjectTrump, .overwrite])
    func aResolvedConflictRecordsTheStoredValueAsOld(_ policy: MergePolicy) throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(.sqlite, in: dir)
        let id = try Self.insertNote(c)
        let mine = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c, name: "mine")
        mine.mergePolicy = policy
        try mine.performAndWait {
            let note = try #require(mine.existingObject(with: id) as? HNote)
            #expect(note.rank == 1)
        }
        let theirs = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c, name: "theirs")
        try theirs.performAndWait {
            let note = try #require(theirs.existingObject(with: id) as? HNote)
            note.rank = 5
            try theirs.save()
        }
        try mine.performAndWait {
            let note = try #require(mine.existingObject(with: id) as? HNote)
            note.rank = 7
            try mine.save()
        }
        let last = try #require(allHistory(c).last)
        #expect(last.contextName == "mine")
        let update = try #require(last.change(of: id))
        #expect(update.updatedProperties == ["rank"])
        #expect(update.oldValue(forKey: "rank", as: Int.self) == 5)
        #expect(update.newValue(forKey: "rank", as: Int.self) == 7)
    }

    /// An attribute changed and changed back before the save is no change (ours does not mark
    /// an object updated for a value equal to the stored one): no transaction is written.
    @Test func anEditUndoneBeforeSavingRecordsNothing() throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(.sqlite, in: dir)
        let id = try Self.insertNote(c)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        try context.performAndWait {
            let note = try #require(context.existingObject(with: id) as? HNote)
            note.rank = 2
            note.rank = 1
            try context.save()
        }
        #expect(try allHistory(c).count == 1)
    }
}
