import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// A history kit's recovery from expired progress when nothing of the other authors remains.
@Suite("History kit: recovering with nothing left to merge", .serialized, .timeLimit(.minutes(2)))
struct HistoryKitRecoveryTests {
    /// The history after the app's progress was deleted and what remains is the app's own: the
    /// kit recovers once (refreshes its contexts, logs it) and records its progress at the
    /// store's last transaction; the next rounds do not recover again, and another author's
    /// next transaction is merged.
    @Test(arguments: storedTypes)
    func aRecoveryWithNothingToMergeRecordsProgress(_ type: StoreType) async throws {
        let (app, widget) = try kitPair(type)
        try widget.insert(1)
        try app.coordinator.recordHistoryProgress(
            HistoryProgress(transactionNumber: try app.lastNumber(), timestamp: Date(), updated: Date()), author: "app", in: app.store)
        try widget.insert(2)
        try app.insert(1)
        let last = try app.lastNumber()
        // Another program (or a kit's maximumDuration) deletes the history before the app's own
        // transaction: the widget's second, which the app has not merged, is gone.
        try app.coordinator.execute(
            .deleteHistory(before: PersistentHistoryToken(storeIdentifier: app.store.identifier, transactionNumber: last)))
        let logs = KitLogRecorder()
        let kit = PersistentHistoryTrackingKit(
            container: app.connect, currentAuthor: "app", allAuthors: ["app", "widget"], cleanStrategy: .none, logger: logs,
            logLevel: 1)
        defer { kit.stop() }
        #expect(await kit.mergePendingHistory() == 0)
        #expect(try app.progress()["app"] == last)
        #expect(await kit.mergePendingHistory() == 0)
        #expect(await kit.mergePendingHistory() == 0)
        #expect(logs.all.filter { $0.0 == .notice && $0.1.contains("oldest remaining") }.count == 1)
        let rounds = RoundReader(kit.engine)
        let third = try widget.insert(3)
        #expect(await rounds.through(try widget.lastNumber())?.recovered == false)
        #expect(try await app.viewText(third) == "widget 3")
    }

    /// RCDataKit's tracker likewise: after one recovery with nothing of the others left, its own
    /// batch requests (each runs a round) recover no more.
    @Test func theTrackerRecoversOnceWithNothingToMerge() async throws {
        let (app, widget) = try kitPair()
        try widget.insert(1)
        try app.coordinator.recordHistoryProgress(
            HistoryProgress(transactionNumber: try app.lastNumber(), timestamp: Date(), updated: Date()), author: "app", in: app.store)
        try widget.insert(2)
        try app.insert(1)
        let last = try app.lastNumber()
        try app.coordinator.execute(
            .deleteHistory(before: PersistentHistoryToken(storeIdentifier: app.store.identifier, transactionNumber: last)))
        let tracker = PersistentHistoryTracker(container: app.connect, currentAuthor: "app")
        await tracker.startMonitoring()
        let rounds = RoundReader(tracker.engine)
        let view = app.view
        func batch(_ text: String) throws {
            try view.performAndWait {
                _ = try view.execute(
                    BatchUpdateRequest<RemoteNote>(predicate: #Predicate { $0.author == "app" }, propertiesToUpdate: ["text": text]))
            }
        }
        try batch("first")
        #expect(await rounds.next { $0.recovered } != nil)
        #expect(try app.progress()["app"].map { $0 >= last } == true)
        try batch("second")
        #expect(await rounds.next()?.recovered == false)
        await tracker.stopMonitoring()
    }
}
