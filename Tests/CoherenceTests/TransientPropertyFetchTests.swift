import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// An object with transient attributes (kept in memory only, never stored).
final class TransientNote: ManagedObject {
    @Attribute var name: String = ""
    @Attribute(.transient) var scratch: Int = 0
    @Attribute(.transient) var draft: String?
}

/// Transient attributes are not stored, so no fetch can test, sort or read them.
@Suite("Fetches naming transient attributes")
struct TransientPropertyFetchTests {
    /// A predicate or sort descriptor on a transient attribute failed in SQLite and PostgreSQL
    /// with `.storeReadFailed` ("no such column") while the in-memory store answered (`scratch
    /// == 1` matched nothing, `draft == nil` everything), and a dictionary fetch listed a
    /// transient attribute with a value no one stored. Each is now refused, in every store:
    /// `.unsupportedPredicate` naming the attribute, `.unknownKey` for the dictionary fetch.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func transientAttributesAreRefused(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("TransientFetch")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [TransientNote.self]))
        try coordinator.addPersistentStore(type: type, at: try dir.storeURL(type, "notes"))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            for i in 0..<3 {
                let note = TransientNote(context: context)
                note.name = "n\(i)"
                note.scratch = i
            }
            try context.save()
            let requests: [(String, FetchRequest<TransientNote>)] = [
                ("scratch", FetchRequest(predicate: #Predicate { $0.scratch == 1 })),
                ("draft", FetchRequest(predicate: #Predicate { $0.draft == nil })),
                ("builder", FetchRequest(predicate: \.scratch >= 1)),
                ("sort", FetchRequest(sortBy: [SortDescriptor(\.scratch)]))
            ]
            for (name, request) in requests {
                let fetch = #expect(throws: CoherenceError.self, "\(name)") { try context.fetch(request) }
                #expect(fetch?.code == .unsupportedPredicate && fetch?.message.contains("transient") == true, "\(type) \(name)")
                let count = #expect(throws: CoherenceError.self, "\(name)") { try context.count(for: request) }
                #expect(count?.code == .unsupportedPredicate, "\(type) \(name)")
                let ids = #expect(throws: CoherenceError.self, "\(name)") { try coordinator.fetchObjectIDs(request) }
                #expect(ids?.code == .unsupportedPredicate, "\(type) \(name)")
            }
            let batch = #expect(throws: CoherenceError.self) {
                try context.execute(
                    BatchUpdateRequest<TransientNote>(predicate: #Predicate { $0.scratch == 0 }, propertiesToUpdate: ["name": "x"]))
            }
            #expect(batch?.code == .unsupportedPredicate)
            var dictionaries = FetchRequest<TransientNote>()
            dictionaries.propertiesToFetch = ["name", "scratch"]
            let dictionary = #expect(throws: CoherenceError.self) { try coordinator.fetchDictionaries(dictionaries) }
            #expect(dictionary?.code == .unknownKey && dictionary?.propertyName == "scratch")
            // Stored attributes still work, and nothing was changed.
            dictionaries.propertiesToFetch = ["name"]
            #expect(try coordinator.fetchDictionaries(dictionaries).count == 3)
            #expect(try context.fetch(FetchRequest<TransientNote>(predicate: #Predicate { $0.name == "x" })).isEmpty)
        }
    }
}
