import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// Ambar's `localInstance(of:)` with deleted objects (DualCoordinator.md, "Lookups across
// contexts"): an object of another context whose row another context deleted is
// `.objectNotFound`, one the asking context deleted and has not saved is its deleted instance;
// one of the asking context is returned whatever its row's state; and the typed helpers with
// pending changes.

@Suite struct LocalInstanceDeletedTests {
    func code(_ body: () throws(CoherenceError) -> Void) -> CoherenceError.Code? {
        do throws(CoherenceError) {
            try body()
            return nil
        } catch { return error.code }
    }

    @Test func deletedObjectsHaveNoLocalInstance() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let a = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let b = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let (ann, bob) = try a.performAndWait { () throws in
            let ann = Person(context: a)
            ann.name = "Ann"
            let bob = Person(context: a)
            bob.name = "Bob"
            try a.save()
            return (ann, bob)
        }
        nonisolated(unsafe) let annA = ann, bobA = bob
        // Deleted (not saved) in the asking context: its instance, deleted, as Core Data's
        // `existingObject(with:)` (which Ambar's lookup calls) returns it.
        try b.performAndWait { () throws in
            let annB = try b.localInstance(of: annA)
            b.delete(annB)
            #expect(try b.localInstance(of: annA) === annB)
            #expect(annB.isDeleted)
            b.rollback()
            #expect(try b.localInstance(of: annA).name == "Ann")
        }
        // Bob's row deleted by a save the asking context did not merge: b holds him as a fault,
        // c not at all.
        try b.performAndWait { () throws in b.refresh(try b.localInstance(of: bobA), mergeChanges: false) }
        let d = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        nonisolated(unsafe) let bobD = try d.performAndWait { () throws in try d.localInstance(of: bobA) }
        try a.performAndWait { () throws in
            a.delete(bobA)
            try a.save()
        }
        b.performAndWait { #expect(code { () throws(CoherenceError) in _ = try b.localInstance(of: bobD) } == .objectNotFound) }
        let c = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        c.performAndWait {
            #expect(code { () throws(CoherenceError) in _ = try c.localInstance(of: bobD) } == .objectNotFound)
            #expect(c.registeredObjects.isEmpty)
        }
    }

    /// An object of the asking context comes back refreshed, as Ambar's does, whatever its row's
    /// state (as the context's other lookups return a registered, loaded object); from another
    /// context the same object is `.objectNotFound`.
    @Test func anObjectOfTheAskingContextIsReturnedEvenWhenItsRowIsGone() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let a = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let b = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let id = try a.performAndWait { () throws in
            let ann = Person(context: a)
            ann.name = "Ann"
            try a.save()
            return ann.objectID
        }
        nonisolated(unsafe) let annB = try b.performAndWait { () throws in try b.existingObject(with: id) }
        try a.performAndWait { () throws in
            a.delete(try a.existingObject(with: id))
            try a.save()
        }
        try b.performAndWait { () throws in
            let same = try b.localInstance(of: annB)
            #expect(same === annB)
            #expect((same as? Person)?.name == "Ann")
        }
        let c = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        c.performAndWait {
            #expect(code { () throws(CoherenceError) in _ = try c.localInstance(of: annB) } == .objectNotFound)
        }
    }

    @Test func theTypedHelpersSeeUnsavedChanges() throws {
        let dir = try TemporaryDirectory()
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try makeCoordinator(.sqlite, in: dir))
        try context.performAndWait { () throws in
            let ann = Person(context: context)
            ann.name = "Ann"
            try context.save()
            ann.name = "Zed"
            // Renamed, not saved: neither found nor fetched under the old name.
            #expect(try Person.findOrFetch(in: context, predicate: #Predicate { $0.name == "Ann" }) == nil)
            #expect(try Person.findOrFetch(in: context, predicate: #Predicate { $0.name == "Zed" }) === ann)
            context.delete(ann)
            #expect(try Person.find(in: context, predicate: #Predicate { $0.name == "Zed" }) == nil)
            #expect(try Person.findOrFetch(in: context, predicate: #Predicate { $0.name == "Zed" }) == nil)
            #expect(try Person.delete(in: context, predicate: #Predicate { $0.name == "Zed" || $0.name == "Ann" }) == 0)
            let new = Person(context: context)
            new.name = "New"
            #expect(try Person.find(in: context, predicate: #Predicate { $0.name == "New" }) === new)
            #expect(try Person.fetchDistinctValues(of: \.name, in: context) == ["New"])
            #expect(try Person.count(in: context) == 1)
            #expect(try Person.count(in: context, includePending: false) == 1)
        }
    }
}
