import Foundation
import Testing
@testable import Coherence
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// A to-one relationship's foreign-key column holding a value that is no key — text, a real
/// number or a blob another program wrote (SQLite keeps them in an `INTEGER` column). It names
/// no object: the object reads nil, predicates comparing the relationship with nil agree, and a
/// save that does not set the relationship leaves the value where it is.
@Suite struct HostileForeignKeyTests {
    @Test(arguments: ["'Paris'", "2.5", "x'01'"])
    func aForeignKeyThatIsNoKeyReadsAndMatchesAsNil(_ literal: String) throws {
        let dir = try TemporaryDirectory("hostile-fk")
        let url = dir.file("store.sqlite")
        do {
            let coordinator = try makeCoordinator(.sqlite, in: dir)
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait {
                let paris = Town(context: context)
                paris.name = "Paris"
                for name in ["Ann", "Bob"] {
                    let person = Person(context: context)
                    person.name = name
                    person.town = paris
                }
                Person(context: context).name = "Cid"
                try context.save()
            }
            try coordinator.remove(try #require(coordinator.persistentStores.first))
        }
        try runForeignSQL("UPDATE Person SET town = \(literal) WHERE name = 'Ann'", at: url.path)
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let people = try context.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]))
            #expect(people.map { $0.town?.name } == [nil, "Paris", nil])
            func names(_ predicate: Predicate<Person>) throws -> [String] {
                try context.fetch(FetchRequest<Person>(predicate: predicate, sortBy: [SortDescriptor(\.name)])).map(\.name)
            }
            #expect(try names(#Predicate { $0.town == nil }) == ["Ann", "Cid"])
            #expect(try names(#Predicate { $0.town != nil }) == ["Bob"])
            #expect(try names(#Predicate { !($0.town == nil) }) == ["Bob"])
            let paris = try #require(people[1].town)
            #expect(try names(#Predicate<Person> { $0.town == nil } || (\Person.town == paris)) == ["Ann", "Bob", "Cid"])
            #expect(try names(\Person.town != paris) == ["Ann", "Cid"])
            #expect(try context.count(for: FetchRequest<Person>(predicate: #Predicate { $0.town == nil })) == 2)
            // A save that does not set the relationship leaves the value as it is.
            people[0].name = "Anna"
            try context.save()
        }
        let reader = SQLiteMigrationDatabase(try SQLiteConnection(location: .file(url.path), switchesToWAL: false))
        let stored = try reader.texts("SELECT quote(town) FROM Person WHERE name = 'Anna'")
        #expect(stored == [literal.uppercased().hasPrefix("X'") ? "X'01'" : literal])
    }
}
