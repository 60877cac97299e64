import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// RCDataKit's `PersistentHistoryTracker` across real processes: `CoherenceKitAuthor --tracker`
/// children, each an author with its own tracker, and this process as a writer ("sync", no
/// tracker). Each tracker merges the others' changes into its view context (a registered note
/// shows a new text), and its cleaning after every merge keeps what another tracker with
/// progress has not merged, even while that process is gone.
@Suite("History tracker: processes", .timeLimit(.minutes(10)))
struct HistoryTrackerProcessTests {
    @Test(arguments: storedTypes)
    func trackersInTwoProcessesMergeAndCleanOnlyWhatBothMerged(_ type: StoreType) async throws {
        let directory = try TemporaryDirectory()
        let sync = try KitStack(directory, author: "sync", type: type)
        let url = directory.file("notes.sqlite")
        func tracker(_ author: String) throws -> WriterProcess {
            try WriterProcess(store: url, author: author, ["--tracker"] + sync.serverArguments, program: "CoherenceKitAuthor")
        }
        let app = try tracker("app"), widget = try tracker("widget")
        #expect(await app.waitForLine("READY"))
        #expect(await widget.waitForLine("READY"))
        try sync.insert(1)
        // Each registers the note in its view context, then sees the new text merged in.
        #expect(await app.ask("expect sync 1 sync 1") == "OK")
        #expect(await widget.ask("expect sync 1 sync 1") == "OK")
        try sync.setText("second", of: "sync", 1)
        #expect(await app.ask("expect sync 1 second") == "OK")
        #expect(await widget.ask("expect sync 1 second") == "OK")
        // Each process's own save reaches the other.
        #expect(await app.ask("update sync 1 third")?.hasPrefix("SAVED") == true)
        #expect(await widget.ask("expect sync 1 third") == "OK")
        // The widget goes away; what it did not merge stays in the history the app cleans.
        widget.send("quit")
        #expect(await widget.waitForLine("DONE"))
        let gone = await widget.finish()
        #expect(gone.status == 0, "the widget failed: \(gone.errors)")
        let widgetProgress = try #require(try sync.progress()["widget"])
        try sync.setText("fourth", of: "sync", 1)
        #expect(await app.ask("expect sync 1 fourth") == "OK")
        #expect(await app.ask("update sync 1 fifth")?.hasPrefix("SAVED") == true)
        let last = try sync.lastNumber()
        let unmerged = try sync.coordinator.execute(
            PersistentHistoryChangeRequest.fetchHistory(
                after: PersistentHistoryToken(storeIdentifier: sync.store.identifier, transactionNumber: widgetProgress))
        ).transactions
        #expect(unmerged.last?.token.transactionNumber == last)
        #expect(unmerged.count >= 2)
        // Started again, the widget's tracker catches up from its progress.
        let again = try tracker("widget")
        #expect(await again.waitForLine("READY"))
        #expect(await again.ask("expect sync 1 fifth") == "OK")
        try sync.insert(2)
        #expect(await again.ask("expect sync 2 sync 2") == "OK")
        #expect(await app.ask("expect sync 2 sync 2") == "OK")
        for p in [app, again] {
            p.send("quit")
            #expect(await p.waitForLine("DONE"))
            let result = await p.finish()
            #expect(result.status == 0, "a tracker failed: \(result.errors)")
        }
        let progress = try sync.progress(), end = try sync.lastNumber()
        #expect(progress["app"] == end && progress["widget"] == end, "\(progress)")
    }
}
