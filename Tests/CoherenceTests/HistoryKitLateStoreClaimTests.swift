import Dispatch
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// A kit logger that, once armed, holds the next round at its first message ("got a
/// notification", before the round fetches anything) until the test lets it go.
final class RoundHoldingLogger: PersistentHistoryTrackingKitLoggerProtocol {
    let armed = LockedValue(false)
    let held = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    func log(type: PersistentHistoryTrackingKitLogType, message: String) {
        guard message == "got a notification",
            armed.withLock({ s in
                defer { s = false }; return s
            })
        else { return }
        held.signal()
        release.wait()
    }
}

/// The history-tracking guide: "a kit or tracker records its author's progress as it starts …
/// so an author whose kit runs is waited for even before it has merged anything" — also in a
/// store its container attaches after the kit started (a user logging in).
@Suite("History kit: a store attached after the kit started", .timeLimit(.minutes(2)))
struct HistoryKitLateStoreClaimTests {
    @Test func anotherKitsCleaningWaitsForARunningKitInAStoreAttachedLater() async throws {
        let aliceDir = try TemporaryDirectory()
        let bobDir = try TemporaryDirectory()
        let app = try KitStack(aliceDir, author: "app")
        let logger = RoundHoldingLogger()
        let kit = PersistentHistoryTrackingKit(
            container: app.connect, currentAuthor: "app", allAuthors: ["app", "widget"], logger: logger, logLevel: 2)
        defer { kit.stop() }
        // Bob's store, where his widget already wrote a note.
        let widget = try KitStack(bobDir, author: "widget")
        let widgetKit = widget.kit()
        defer { widgetKit.stop() }
        let widgetRounds = RoundReader(widgetKit.engine)
        let widgetNote: ObjectID? = try widget.insert(1)
        // Alice logs out, bob logs in: the app's view context shows bob's note.
        try app.connect.detach(persistentStore: app.store)
        try app.connect.attachPersistentStore(at: bobDir.url, for: app.configuration)
        #expect(try await app.shown("widget", 1) == "widget 1")
        let appRounds = RoundReader(kit.engine)
        // The widget changes the note; the app's round for it has not fetched yet.
        logger.armed.withLock { $0 = true }
        try widget.setText("changed", of: "widget", 1)
        let changed = try widget.lastNumber()
        #expect(await waitOffPool(logger.held))
        // The app writes; the widget merges that and cleans.
        try app.insert(1)
        #expect(await widgetRounds.nextMerge() != nil)
        // The widget's cleaning waited for the app, whose kit runs: the change is still there.
        #expect(try widget.historyNumbers().contains(changed))
        logger.release.signal()
        // The held round merges the change.
        #expect(await appRounds.next() != nil)
        #expect(try await app.registeredText(try #require(widgetNote)) == "changed")
    }
}
