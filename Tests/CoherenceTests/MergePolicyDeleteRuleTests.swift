import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

// A deleted object whose row another context changed meanwhile (it related a new object to it)
// is a version conflict; a policy that keeps the delete applies the delete rules to the new
// destinations too, so no row is left with the key of a row that is gone.

@Suite("Merge policies: delete rules of a deleted object in conflict")
struct MergePolicyDeleteRuleTests {
    enum Setup: String, CaseIterable, CustomTestStringConvertible {
        /// The context deletes and saves.
        case plain
        /// A child deletes and saves into the context, which saves.
        case nested
        /// The context, pinned to a query generation from before the other save, deletes and saves.
        case pinned
        var testDescription: String { rawValue }
    }

    /// The town is deleted (cascading to its people) while another context adds Dee to it.
    @Test(
        arguments: [MergePolicy.mergeByPropertyStoreTrump, .mergeByPropertyObjectTrump, .overwrite, .rollback, .error],
        Setup.allCases)
    func aCascadeReachesAPersonAnotherContextAddedMeanwhile(_ policy: MergePolicy, _ setup: Setup) throws {
        let f = try QueryGenerationTests.Fixture(.sqlite)
        let saver = f.context("saver")
        saver.mergePolicy = policy
        if setup == .pinned { try saver.performAndWait { try saver.setQueryGeneration(from: .current) } }
        let deleter = setup == .nested ? ManagedObjectContext(concurrencyType: .privateQueue, parent: saver, name: "child") : saver
        try deleter.performAndWait {
            deleter.delete(try deleter.existingObject(with: f.town))
            if setup == .nested { try deleter.save() }
        }
        let other = f.context("other")
        try other.performAndWait {
            let town = try #require(other.existingObject(with: f.town) as? Town)
            let dee = Person(context: other)
            dee.name = "Dee"
            dee.town = town
            try other.save()
        }
        let result: Result<Void, CoherenceError> = saver.performAndWait {
            do throws(CoherenceError) { try saver.save() } catch { return .failure(error) }
            return .success(())
        }
        let check = f.context("check")
        try check.performAndWait {
            let people = try check.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\Person.name)]))
            let towns = try check.count(for: FetchRequest<Town>())
            // A person whose town key names no row.
            let dangling = people.filter { p in p.town.map { (try? check.existingObject(with: $0.objectID)) == nil } ?? false }
            #expect(dangling.isEmpty, "\(dangling.map(\.name))")
            switch policy.kind {
            case .error:
                #expect(result.failure?.code == .conflict)
                #expect(people.count == 4 && towns == 1)
            case .rollback:
                // The town's delete is dropped (the store wins); the people it cascaded to were
                // not in conflict, so their deletes are saved.
                #expect(result.failure == nil)
                #expect(people.map(\.name) == ["Dee"] && towns == 1)
            case .storeTrump, .objectTrump, .overwrite:
                #expect(result.failure == nil)
                #expect(people.isEmpty && towns == 0)
            }
        }
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let e) = self { return e }
        return nil
    }
}
