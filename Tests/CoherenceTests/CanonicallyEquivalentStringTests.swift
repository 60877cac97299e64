import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Canonically equivalent strings with different bytes (`"\u{E9}"`, precomposed, and
/// `"e\u{301}"`, a letter and a combining accent) are different values, as the stores compare
/// text: assigning one over the other is a change that is saved, in every store, and through
/// RCDataKit's `Updatable` too.
@Suite struct CanonicallyEquivalentStringTests {
    static let precomposed = "\u{E9}"
    static let decomposed = "e\u{301}"

    @Test func storedValuesCompareTextByItsBytes() {
        #expect(StoredValue.text(Self.precomposed) != .text(Self.decomposed))
        #expect(StoredValue.text(Self.precomposed) == .text("\u{E9}"))
        #expect(Set([StoredValue.text(Self.precomposed), .text(Self.decomposed)]).count == 2)
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func assigningTheOtherFormIsSaved(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("equivalent-strings-\(type)")
        let coordinator = try makeCoordinator(type, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let id = try context.performAndWait { () throws -> ObjectID in
            let town = Town(context: context)
            town.name = Self.precomposed
            try context.save()
            town.name = Self.decomposed
            #expect(town.hasChanges)
            try context.save()
            return town.objectID
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try reader.performAndWait {
            let town = try #require(reader.existingObject(with: id) as? Town)
            #expect(Array(town.name.utf8) == Array(Self.decomposed.utf8))
            let decomposed = Self.decomposed, precomposed = Self.precomposed
            #expect(try reader.count(for: FetchRequest<Town>(predicate: #Predicate { $0.name == decomposed })) == 1)
            #expect(try reader.count(for: FetchRequest<Town>(predicate: #Predicate { $0.name == precomposed })) == 0)
        }
    }

    @Test func updatableWritesTheOtherForm() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir, model: try makeHelpersModel())
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let s = TestSubject(context: context)
            s.name = Self.precomposed
            try context.save()
            #expect(!s.update(\.name, value: Self.precomposed))
            #expect(!s.hasChanges)
            #expect(s.update(\.name, value: Self.decomposed))
            #expect(s.hasChanges)
            #expect(Array(s.name.utf8) == Array(Self.decomposed.utf8))
        }
    }
}
