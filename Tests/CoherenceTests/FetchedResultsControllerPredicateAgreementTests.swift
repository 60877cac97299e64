import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// The controller applies its context's changes in memory (the predicate evaluated on the
// objects); a fetch evaluates it in the store. Both must agree, for values the store keeps in a
// special form (NaN, −0.0, infinities), strings that differ by case or normalization, and nil.

@Suite struct FetchedResultsControllerPredicateAgreementTests {
    static let predicates: [(String, Predicate<Person>)] = [
        ("score > 0.5", #Predicate<Person> { $0.score > 0.5 }),
        ("score < 1", #Predicate<Person> { $0.score < 1 }),
        ("score == 0", #Predicate<Person> { $0.score == 0 }),
        ("score != 0", #Predicate<Person> { $0.score != 0 }),
        ("score >= -1", #Predicate<Person> { $0.score >= -1 }),
        ("name < a", #Predicate<Person> { $0.name < "a" }),
        ("contains é", #Predicate<Person> { $0.name.contains("é") }),
        ("lsc e", #Predicate<Person> { $0.name.localizedStandardContains("e") }),
        ("email nil", #Predicate<Person> { $0.email == nil })
    ]

    @Test(arguments: [StoreType.sqlite, .inMemory])
    func theControllersInMemoryMatchAgreesWithTheStore(_ type: StoreType) throws {
        for (label, predicate) in Self.predicates {
            let dir = try TemporaryDirectory("frc-agree-\(type)-\(label.filter(\.isLetter))")
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try makeCoordinator(type, in: dir))
            let request = FetchRequest<Person>(predicate: predicate, sortBy: [SortDescriptor(\.name)])
            let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context)
            let scores: [Double] = [0, -0.0, .nan, 1, -1, .infinity, -.infinity, 0.75]
            let names = ["abc", "ABC", "é", "É", "e\u{301}", "Zed", "", "a"]
            let (shown, fresh) = try context.performAndWait { () throws in
                try controller.performFetch()
                for (i, s) in scores.enumerated() {
                    let p = Person(context: context)
                    p.name = names[i] + "\(i)"
                    p.score = s
                    p.email = i % 2 == 0 ? nil : "x"
                }
                context.processPendingChanges()
                let shown = controller.fetchedObjects.map(\.name)
                try context.save()
                context.reset()
                return (shown, try context.fetch(request).map(\.name))
            }
            #expect(shown == fresh, "\(type) \(label)")
        }
    }
}
