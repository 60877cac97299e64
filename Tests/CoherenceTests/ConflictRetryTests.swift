import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

final class RetryTally: ManagedObject {
    @Attribute var label: String = ""
    @Attribute var count: Int = 0
}

/// A policy that, before resolving, lets another writer save the same row (the first
/// `interruptions` times) and then resolves as `basedOn`; with `resolves: false` it changes
/// nothing, so the next try meets the same conflict.
/// `@unchecked Sendable` is safe: `calls` is read and written only on the saving context's queue
/// (a policy resolves on its context's executor), and the test reads it after the save returned.
final class InterruptedPolicy: MergePolicy, @unchecked Sendable {
    let interrupt: () throws -> Void
    let resolves: Bool
    let interruptions: Int
    var calls = 0
    init(basedOn policy: MergePolicy, interruptions: Int, resolves: Bool = true, interrupt: @escaping () throws -> Void) {
        self.interrupt = interrupt
        self.resolves = resolves
        self.interruptions = interruptions
        super.init(basedOn: policy)
    }
    override func resolve(conflicts: [SaveConflict], in context: ManagedObjectContext) throws {
        calls += 1
        if calls <= interruptions { try interrupt() }
        if resolves { try super.resolve(conflicts: conflicts, in: context) }
    }
}

/// A save under a resolving policy goes on trying while other writers keep changing its rows
/// between the tries (as Core Data's save does not give up), and stops when trying does not help.
@Suite("Saves: conflicts that keep moving")
struct ConflictRetryTests {
    struct Fixture {
        let dir: TemporaryDirectory
        let mine: ManagedObjectContext
        let other: ManagedObjectContext
        let tally: ObjectID

        init() throws {
            dir = try TemporaryDirectory()
            let model = try ManagedObjectModel(types: [RetryTally.self])
            let url = dir.file("tally.sqlite")
            func coordinator() throws -> PersistentStoreCoordinator {
                let c = PersistentStoreCoordinator(managedObjectModel: model)
                try c.addPersistentStore(type: .sqlite, at: url)
                return c
            }
            mine = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try coordinator())
            other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try coordinator())
            let mine = self.mine
            tally = try mine.performAndWait {
                let t = RetryTally(context: mine)
                t.label = "start"
                try mine.save()
                return t.objectID
            }
        }

        /// Another coordinator's context adds one to the count and saves.
        func bumpElsewhere() throws {
            let other = self.other, tally = self.tally
            try other.performAndWait {
                let t = try #require(try other.existingObject(with: tally) as? RetryTally)
                other.refresh(t, mergeChanges: false)
                t.count += 1
                try other.save()
            }
        }

        /// Changes the label in `mine` and saves under `policy`.
        func saveMine(_ policy: MergePolicy) throws(CoherenceError) {
            let mine = self.mine, tally = self.tally
            try mine.performAndWait { () throws(CoherenceError) in
                mine.mergePolicy = policy
                guard let t = try mine.existingObject(with: tally) as? RetryTally else {
                    throw CoherenceError(.objectNotFound, "No tally.")
                }
                t.label = "mine"
                try mine.save()
            }
        }

        func stored() throws -> (label: String, count: Int) {
            let c = PersistentStoreCoordinator(managedObjectModel: other.persistentStoreCoordinator.managedObjectModel)
            try c.addPersistentStore(type: .sqlite, at: dir.file("tally.sqlite"))
            let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
            return try reader.performAndWait {
                let t = try #require(try reader.fetch(FetchRequest<RetryTally>()).first)
                return (t.label, t.count)
            }
        }
    }

    @Test("twelve tries, each meeting a newer conflict, end in a save that keeps both writers' changes")
    func keepsTryingWhileOthersWrite() throws {
        let f = try Fixture()
        try f.bumpElsewhere()  // the first try conflicts
        let policy = InterruptedPolicy(basedOn: .mergeByPropertyObjectTrump, interruptions: 12) { try f.bumpElsewhere() }
        try f.saveMine(policy)
        #expect(policy.calls == 13)
        let stored = try f.stored()
        #expect(stored.label == "mine")
        #expect(stored.count == 13)
    }

    @Test("the same conflict twice after five tries is thrown: trying again would not help")
    func stopsWhenNothingMoves() throws {
        let f = try Fixture()
        try f.bumpElsewhere()
        let policy = InterruptedPolicy(basedOn: .mergeByPropertyObjectTrump, interruptions: 0, resolves: false) {}
        #expect(throws: CoherenceError.self) { try f.saveMine(policy) }
        #expect(policy.calls == 4)
        #expect(try f.stored().label == "start")
        #expect(try f.stored().count == 1)
    }

    @Test("a writer that never stops: the save gives up after its last try, nothing written")
    func givesUpAtTheLimit() throws {
        let f = try Fixture()
        try f.bumpElsewhere()
        let policy = InterruptedPolicy(basedOn: .mergeByPropertyObjectTrump, interruptions: .max) { try f.bumpElsewhere() }
        do {
            try f.saveMine(policy)
            Issue.record("The save succeeded although every try met a conflict.")
        } catch {
            #expect(error.code == .conflict)
        }
        let limit = ManagedObjectContext.conflictRoundLimit
        #expect(policy.calls == limit - 1)
        let stored = try f.stored()
        #expect(stored.label == "start")
        #expect(stored.count == limit)
    }
}
