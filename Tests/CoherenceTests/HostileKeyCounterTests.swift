import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Key counters (`Z_PRIMARYKEY.Z_MAX`) that another program left holding no integer.
@Suite struct HostileKeyCounterTests {
    /// In a store made by Core Data (whose `Z_MAX` column may hold NULL), a counter that is
    /// NULL, text or a real number still gives new keys past the table's largest one. Every
    /// insert failed: NULL and a real number as keys that "ran out", text as a `.conflict` that
    /// named no row.
    @Test(arguments: ["NULL", "'abc'", "2.5", "X'01'"])
    func aCoreDataCounterThatIsNoIntegerStillGivesNewKeys(_ counter: String) throws {
        let dir = try TemporaryDirectory()
        let url = try CoreDataStoreTests.fixtureCopy(in: dir)
        try runForeignSQL("UPDATE Z_PRIMARYKEY SET Z_MAX = \(counter)", at: url.path)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try CoreDataStoreTests.studentModel())
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            for n in 0..<2 { try insertObject(context, "Student", ["data": Data([UInt8(n)]), "isOldData": false]) }
            try context.save()
        }
        #expect(try CoreDataStoreTests.query(url, "SELECT count(*), max(Z_PK) FROM ZSTUDENT") == [["12", "12"]])
        #expect(try CoreDataStoreTests.query(url, "SELECT Z_MAX FROM Z_PRIMARYKEY") == [["12"]])
    }

    /// The same in a store of Coherence's layout, whose counter column is `NOT NULL` but takes
    /// text or a real number: a table that holds no row yet (Town) got a real-number key and a
    /// table with rows (Person) a key that exists.
    @Test(arguments: ["'abc'", "2.5"])
    func aCounterThatIsNoIntegerStillGivesNewKeys(_ counter: String) throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("store.sqlite")
        do {
            let coordinator = try makeCoordinator(.sqlite, in: dir)
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait {
                for n in 0..<3 { Person(context: context).name = "old \(n)" }
                try context.save()
            }
            try coordinator.remove(try #require(coordinator.persistentStores.first))
        }
        try runForeignSQL("UPDATE Z_PRIMARYKEY SET Z_MAX = \(counter)", at: url.path)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            for n in 0..<2 { Person(context: context).name = "new \(n)" }
            Town(context: context).name = "town"
            try context.save()
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try reader.performAndWait {
            let people = try reader.fetch(FetchRequest<Person>())
            #expect(people.map(\.name).sorted() == ["new 0", "new 1", "old 0", "old 1", "old 2"])
            #expect(Set(people.map(\.objectID.primaryKey)).count == 5)
            #expect(try reader.fetch(FetchRequest<Town>()).map(\.name) == ["town"])
        }
        let c = try SQLiteConnection(location: .file(url.path))
        let counters = try c.prepare("SELECT typeof(Z_MAX) FROM Z_PRIMARYKEY WHERE Z_NAME IN ('Person', 'Town')").rows { $0.value(0) }
        #expect(counters == [.text("integer"), .text("integer")])
    }
}
