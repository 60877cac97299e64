import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Objects whose only changes are relationships (a to-many side, or a to-one kept by the other
/// side's foreign key) are still checked at save: their rows must exist at the version loaded,
/// and their versions move, as Core Data's do. Otherwise a save could write a reference to a row
/// another context deleted.
@Suite("Relationship-only changes and optimistic locking")
struct RelationshipConflictTests {
    /// A store with the town Nice (population 3) and the person Ann (no town, no clubs), and
    /// the club Chess.
    private static func seeded(_ type: StoreType, in dir: TemporaryDirectory) throws -> PersistentStoreCoordinator {
        let c = try makeCoordinator(type, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        try context.performAndWait {
            let nice = Town(context: context)
            nice.name = "Nice"
            nice.population = 3
            Person(context: context).name = "Ann"
            Club(context: context).title = "Chess"
            try context.save()
        }
        return c
    }

    /// Ann's town, clubs and age, and the numbers of towns and clubs, as a new context reads them.
    private static func ann(in c: PersistentStoreCoordinator) throws
        -> (town: String?, clubs: [String], age: Int, towns: Int, clubCount: Int)
    {
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        return try context.performAndWait {
            let ann = try #require(try context.fetch(FetchRequest<Person>()).first)
            return (
                ann.town?.name, ann.clubs.map(\.title).sorted(), ann.age, try context.count(for: FetchRequest<Town>()),
                try context.count(for: FetchRequest<Club>())
            )
        }
    }

    /// Context A makes `edit` (unsaved), context B deletes the first `T` and saves, then A
    /// saves under `policy`: the store and A's save error.
    private static func editWhileDeletedElsewhere<T: ManagedObject>(
        _ type: StoreType, in dir: TemporaryDirectory, deleting: T.Type, policy: MergePolicy = .error,
        _ edit: @escaping (ManagedObjectContext, Person) throws -> Void
    ) throws -> (PersistentStoreCoordinator, CoherenceError?) {
        let c = try Self.seeded(type, in: dir)
        let a = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        a.mergePolicy = policy
        let b = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        try a.performAndWait { try edit(a, try #require(try a.fetch(FetchRequest<Person>()).first)) }
        try b.performAndWait {
            b.delete(try #require(try b.fetch(FetchRequest<T>()).first))
            try b.save()
        }
        return (c, saveError(a))
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aToOneSetToAnObjectDeletedElsewhereIsAConflict(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, error) = try Self.editWhileDeletedElsewhere(type, in: dir, deleting: Town.self) { a, ann in
            ann.town = try #require(try a.fetch(FetchRequest<Town>()).first)  // Nice changes too: its people
        }
        #expect(error?.code == .conflict, "\(String(describing: error))")
        // Nothing was written: Ann has no town (not a key of a row that is gone).
        #expect(try Self.ann(in: c).town == nil)
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aToManyInsertOfAnObjectDeletedElsewhereIsAConflict(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, error) = try Self.editWhileDeletedElsewhere(type, in: dir, deleting: Club.self) { a, ann in
            ann.clubs.insert(try #require(try a.fetch(FetchRequest<Club>()).first))
        }
        #expect(error?.code == .conflict, "\(String(describing: error))")
        #expect(try Self.ann(in: c).clubs.isEmpty)
    }

    /// Under a policy that resolves conflicts, the deleted destination is dropped and the save
    /// goes through with what remains.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func underObjectTrumpTheDeletedDestinationIsDropped(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, error) = try Self.editWhileDeletedElsewhere(
            type, in: dir, deleting: Town.self, policy: .mergeByPropertyObjectTrump
        ) { a, ann in
            ann.town = try #require(try a.fetch(FetchRequest<Town>()).first)
            ann.age = 31
        }
        #expect(error == nil, "\(String(describing: error))")
        let stored = try Self.ann(in: c)
        #expect(stored.age == 31)
        #expect(stored.town == nil)
        #expect(stored.towns == 0)
    }

    /// The same for a many-to-many: the deleted club leaves Ann's clubs, and no join row is
    /// written for it.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func underObjectTrumpADeletedManyToManyDestinationIsDropped(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, error) = try Self.editWhileDeletedElsewhere(
            type, in: dir, deleting: Club.self, policy: .mergeByPropertyObjectTrump
        ) { a, ann in
            ann.clubs.insert(try #require(try a.fetch(FetchRequest<Club>()).first))
            ann.age = 32
        }
        #expect(error == nil, "\(String(describing: error))")
        let stored = try Self.ann(in: c)
        #expect(stored.clubs.isEmpty)
        #expect(stored.age == 32)
        #expect(stored.clubCount == 0)
    }

    /// A destination changed only through the other side is saved as an update: its version
    /// moves (so another context's change to it from the old version is a conflict).
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aDestinationChangedThroughTheOtherSideMovesItsVersion(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try Self.seeded(type, in: dir)
        let a = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        let b = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        let before = try b.performAndWait { () throws -> Int64 in
            let nice = try #require(try b.fetch(FetchRequest<Town>()).first)
            // Read, so that it keeps the values of this version (a refetch refreshes a fault).
            #expect(nice.population >= 0)
            return nice._state.version
        }
        try a.performAndWait {
            let ann = try #require(try a.fetch(FetchRequest<Person>()).first)
            ann.town = try #require(try a.fetch(FetchRequest<Town>()).first)
            try a.save()
            let nice = try #require(try a.fetch(FetchRequest<Town>()).first)
            #expect(nice._state.version == before + 1)
            #expect(!nice.hasChanges)
        }
        // B changed Nice from the version before: a conflict under the default policy.
        try b.performAndWait { try #require(try b.fetch(FetchRequest<Town>()).first).population = 4 }
        #expect(saveError(b)?.code == .conflict)
        #expect(try Self.ann(in: c).town == "Nice")
    }
}
