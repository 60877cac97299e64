import Dispatch
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// `remove(_:)` while another thread is inside a save or a fetch of the store (stopped there by
/// the coordinator's commit hook or the store's reader trace): the remove waits for the save,
/// which commits whole; the fetch ends with its rows or a typed error, later fetches are
/// `noStoreForEntity`, and the file attached again holds every row.
@Suite("Stores: removed during a save or a fetch", .timeLimit(.minutes(3)))
struct StoreRemovalInterleavingTests {
    static func model() throws -> ManagedObjectModel { try ManagedObjectModel(types: [Town.self, Person.self, Club.self]) }

    /// A save stopped before its COMMIT while the store is removed on another thread: the
    /// remove waits for it; the save is whole.
    @Test func removeWaitsForASaveInProgress() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("s.sqlite")
        let c = PersistentStoreCoordinator(managedObjectModel: try Self.model())
        let store = try c.addPersistentStore(type: .sqlite, at: url)
        let reached = DispatchSemaphore(value: 0), proceed = DispatchSemaphore(value: 0)
        c.beforeCommitHook.withLock {
            $0 = { _ in
                reached.signal(); proceed.wait()
            }
        }
        let saveResult = LockedValue<String?>(nil)
        let saved = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let ctx = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
            ctx.performAndWait {
                for i in 0..<50 { Town(context: ctx).name = "T\(i)" }
                do { try ctx.save(); saveResult.withLock { $0 = "ok" } } catch { saveResult.withLock { $0 = "\(error)" } }
            }
            saved.signal()
        }
        reached.wait()
        c.beforeCommitHook.withLock { $0 = nil }
        let removed = DispatchSemaphore(value: 0)
        let removeResult = LockedValue<String?>(nil)
        Thread.detachNewThread {
            do { try c.remove(store); removeResult.withLock { $0 = "ok" } } catch { removeResult.withLock { $0 = "\(error)" } }
            removed.signal()
        }
        proceed.signal()
        saved.wait()
        removed.wait()
        #expect(saveResult.withLock { $0 } == "ok")
        #expect(removeResult.withLock { $0 } == "ok")
        let c2 = PersistentStoreCoordinator(managedObjectModel: try Self.model())
        try c2.addPersistentStore(type: .sqlite, at: url)
        #expect(try c2.count(for: FetchRequest<Town>()) == 50)
        // Re-adding to the first coordinator.
        try c.addPersistentStore(type: .sqlite, at: url)
        #expect(try c.count(for: FetchRequest<Town>()) == 50)
    }

    /// A fetch stopped inside its read while the store is removed: it ends (rows or a typed
    /// error), the next fetch is noStoreForEntity, and the file opens again with its rows.
    @Test func removeDuringAFetch() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("s.sqlite")
        let c = PersistentStoreCoordinator(managedObjectModel: try Self.model())
        let store = try c.addPersistentStore(type: .sqlite, at: url)
        let ctx = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        try ctx.performAndWait {
            for i in 0..<30 { Town(context: ctx).name = "T\(i)" }
            try ctx.save()
            ctx.reset()
        }
        let engine = try #require(store.engine as? SQLiteStore)
        let reached = DispatchSemaphore(value: 0), proceed = DispatchSemaphore(value: 0)
        let once = LockedValue(false)
        engine.setReaderTrace { sql in
            guard sql.hasPrefix("SELECT"),
                !once.withLock({ v in
                    defer { v = true }; return v
                })
            else { return }
            reached.signal()
            proceed.wait()
        }
        let result = LockedValue<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
            reader.performAndWait {
                do {
                    let towns = try reader.fetch(FetchRequest<Town>())
                    result.withLock { $0 = "rows \(towns.count) \(towns.map(\.name).sorted().first ?? "")" }
                } catch let e as CoherenceError {
                    result.withLock { $0 = "error \(e.code)" }
                } catch {
                    result.withLock { $0 = "untyped \(error)" }
                }
            }
            done.signal()
        }
        reached.wait()
        try c.remove(store)
        proceed.signal()
        done.wait()
        let r = result.withLock { $0 } ?? "none"
        #expect(r == "rows 30 T0" || r.hasPrefix("error"), "\(r)")
        let after = #expect(throws: CoherenceError.self) { try ctx.performAndWait { try ctx.fetch(FetchRequest<Town>()) } }
        #expect(after?.code == .noStoreForEntity)
        try c.addPersistentStore(type: .sqlite, at: url)
        #expect(try c.count(for: FetchRequest<Town>()) == 30)
    }
}
