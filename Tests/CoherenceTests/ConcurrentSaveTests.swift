import Dispatch
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// Eight contexts of two coordinators on one SQLite file save at once, each inserting a person
/// and adding one to a shared counter per save, under every merge policy: every save either
/// commits or reports a conflict (under a resolving policy only when its tries stop helping, see
/// Contexts.md) with nothing written; nothing else escapes (no `SQLITE_BUSY`), every insert is there
/// exactly once, and under the error policy the counter equals the saves that committed (no
/// lost update).
@Suite("Saves: many contexts of two coordinators on one file", .timeLimit(.minutes(3)))
struct ConcurrentSaveTests {
    static let policies: [String: MergePolicy] = [
        "error": .error, "objectTrump": .mergeByPropertyObjectTrump, "storeTrump": .mergeByPropertyStoreTrump,
        "overwrite": .overwrite, "rollback": .rollback
    ]

    @Test(arguments: ["error", "objectTrump", "storeTrump", "overwrite", "rollback"])
    func everySaveCountsExactly(_ policyName: String) throws {
        let policy = try #require(Self.policies[policyName])
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [Town.self, Person.self, Club.self])
        let url = dir.file("shared.sqlite")
        let coordinators = try (0..<2).map { _ in
            let c = PersistentStoreCoordinator(managedObjectModel: model)
            try c.addPersistentStore(type: .sqlite, at: url)
            return c
        }
        let setup = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinators[0])
        try setup.performAndWait {
            Town(context: setup).name = "counter"
            try setup.save()
        }
        let workers = 8, saves = 20
        let unexpected = LockedValue<[String]>([])
        let committed = LockedValue(0)
        let exhausted = LockedValue(0)
        DispatchQueue.concurrentPerform(iterations: workers) { w in
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinators[w % 2])
            context.mergePolicy = policy
            context.performAndWait {
                for s in 0..<saves {
                    do {
                        Person(context: context).name = "w\(w) s\(s)"
                        let town = try context.fetch(FetchRequest<Town>()).first
                        town?.population += 1
                        try context.save()
                        committed.withLock { $0 += 1 }
                    } catch let error as CoherenceError where error.code == .conflict {
                        // The error policy's conflicts, or (any policy) those still there when
                        // the save's tries stopped helping (Contexts.md): nothing was written.
                        if policyName != "error" { exhausted.withLock { $0 += 1 } }
                        context.rollback()
                        context.refreshAllObjects()
                    } catch {
                        unexpected.withLock { $0.append("\(error)") }
                        context.rollback()
                    }
                }
            }
        }
        let errors = unexpected.withLock { $0 }
        #expect(errors.isEmpty, "\(errors.prefix(3))")
        let check = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinators[1])
        try check.performAndWait {
            let n = committed.withLock { $0 }
            let names = try check.fetch(FetchRequest<Person>()).map(\.name)
            #expect(names.count == n)
            #expect(Set(names).count == n)
            if policyName == "error" {
                let population = try check.fetch(FetchRequest<Town>()).first?.population
                #expect(population == n)
            } else {
                #expect(n + exhausted.withLock { $0 } == workers * saves)
                #expect(n > 0)
            }
        }
    }
}
