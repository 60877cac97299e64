import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// A kit keeping progress in `UserDefaults` with more than one store: the date kept under
/// `uniqueString + author` is one for every store, so it says nothing about a store the author
/// has no transaction number for.
@Suite("History kit: UserDefaults progress and several stores")
struct HistoryKitUserDefaultsStoresTests {
    /// A store attached after the kit merged from another one: the kit merges everything the
    /// other authors wrote to it before, not only what they wrote after its last merge elsewhere.
    @Test func aStoreAttachedLaterIsMergedFromItsStart() async throws {
        let (app, widget) = try kitPair()
        let suite = "coherence-tests-\(UUID().uuidString)"
        let defaults = try #require(UserDefaults(suiteName: suite))
        defer { defaults.removePersistentDomain(forName: suite) }
        // The widget's other store, written before the app attaches it.
        let other = GenericConnect<ContextStrategy.Direct>(
            name: "Other", managedObjectModel: try ManagedObjectModel(types: [RemoteNote.self]))
        let otherConfiguration = StoreConfiguration(fileName: "other.sqlite", options: kitStoreOptions)
        try other.attachPersistentStore(at: app.directory.url, for: otherConfiguration)
        func writeOther(_ sequence: Int) throws {
            let c = other.newBackgroundContext()
            c.transactionAuthor = "widget"
            try c.performAndWait {
                let note = RemoteNote(context: c)
                note.author = "widget"
                note.sequence = sequence
                note.text = "other \(sequence)"
                try c.save()
            }
        }
        try writeOther(1)

        let kit = PersistentHistoryTrackingKit(
            container: app.connect, currentAuthor: "app", allAuthors: ["app", "widget"], userDefaults: defaults, cleanStrategy: .none,
            uniqueString: "Test.", logLevel: 0)
        defer { kit.stop() }
        let merged = LockedValue<[String]>([])
        await kit.registerMergeHook { input in
            merged.withLock {
                $0 += input.transactions.flatMap { t in
                    (t.changes ?? []).map { _ in "\(t.storeID == app.store.identifier ? "notes" : "other") \(t.transactionNumber)" }
                }
            }
            return .goOn
        }
        let rounds = RoundReader(kit.engine)
        try widget.insert(1)
        #expect(await rounds.nextMerge() != nil)
        #expect(merged.withLock { $0 } == ["notes 1"])

        try app.connect.attachPersistentStore(at: app.directory.url, for: otherConfiguration)
        try writeOther(2)
        await kit.mergePendingHistory()
        #expect(await rounds.until { merged.withLock { $0.contains("other 2") } })
        #expect(merged.withLock { $0 } == ["notes 1", "other 1", "other 2"])
    }
}
