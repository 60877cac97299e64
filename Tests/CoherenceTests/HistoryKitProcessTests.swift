import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// The history kit across real processes: `CoherenceKitAuthor` children, each an author with
/// its own kit (or a batch importer without one), and this process as the app.
@Suite("History kit: processes", .timeLimit(.minutes(10)))
struct HistoryKitProcessTests {
    /// Three author processes and a batch author write one store: each kit merges the others'
    /// inserts, updates and deletes into its view context, never its own author's; the
    /// importer never holds cleaning back; cleaning keeps everything an author with progress
    /// has not merged.
    @Test(arguments: storedTypes)
    func threeAuthorsAndABatchImporter(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let app = try KitStack(dir, author: "app", type: type)
        let url = dir.file("notes.sqlite")
        let authors = "app,widget,extension,importer"
        let kit = PersistentHistoryTrackingKit(
            container: app.connect, currentAuthor: "app", allAuthors: authors, batchAuthors: ["importer"], logLevel: 0)
        defer { kit.stop() }
        let rounds = RoundReader(kit.engine)
        let ownSeen = LockedValue(0)
        await kit.registerMergeHook { input in
            ownSeen.withLock { $0 += input.transactions.filter { $0.author == "app" }.count }
            return .goOn
        }
        func child(_ name: String, batch: Bool = false) throws -> WriterProcess {
            try WriterProcess(
                store: url, author: name,
                ["--authors", authors, "--batch-authors", "importer"] + (batch ? ["--batch"] : []) + app.serverArguments,
                program: "CoherenceKitAuthor")
        }
        let widget = try child("widget"), ext = try child("extension"), importer = try child("importer", batch: true)
        for p in [widget, ext, importer] { #expect(await p.waitForLine("READY")) }
        func ask(_ p: WriterProcess, _ command: String) async -> String? { await p.ask(command) }

        // Everyone writes.
        #expect(await ask(widget, "insert 1")?.hasPrefix("SAVED ") == true)
        #expect(await ask(ext, "insert 1")?.hasPrefix("SAVED ") == true)
        #expect(await ask(importer, "batch-insert 1 2")?.hasPrefix("SAVED ") == true)
        try app.insert(1)
        for (p, others) in [(widget, ["extension", "app", "importer"]), (ext, ["widget", "app", "importer"])] {
            for other in others { #expect(await ask(p, "expect \(other) 1 \(other) 1") == "OK") }
        }
        for other in ["widget", "extension", "importer"] {
            #expect(try await rounds.until { try await app.shown(other, 1) == "\(other) 1" })
        }
        #expect(try await rounds.until { try await app.shown("importer", 2) == "importer 2" })

        // An update by the extension reaches the widget's and the app's registered objects.
        #expect(await ask(ext, "update widget 1 changed")?.hasPrefix("SAVED ") == true)
        #expect(await ask(widget, "expect widget 1 changed") == "OK")
        #expect(try await rounds.until { try await app.shown("widget", 1) == "changed" })
        // A delete by the app leaves the others' view contexts.
        try app.delete(of: "extension", 1)
        #expect(await ask(ext, "expect extension 1 -") == "OK")
        #expect(await ask(widget, "expect extension 1 -") == "OK")

        // No kit merged its own author's transactions.
        #expect(await ask(widget, "own") == "OWN 0")
        #expect(await ask(ext, "own") == "OWN 0")
        #expect(ownSeen.withLock { $0 } == 0)

        // Cleaning kept what an author with progress has not merged; the importer has none.
        for p in [widget, ext, importer] {
            p.send("quit")
            #expect(await p.waitForLine("DONE"))
            let result = await p.finish()
            #expect(result.status == 0, "an author failed: \(result.errors)")
        }
        let progress = try app.progress()
        #expect(progress["importer"] == nil)
        let lowest = try #require(["app", "widget", "extension"].compactMap { progress[$0] }.min())
        let left = try app.historyNumbers()
        let last = try app.lastNumber()
        #expect(Set(lowest...last).isSubset(of: Set(left)))
        #expect((left.first ?? 0) > 1)  // some history was cleaned
    }

    /// An author process killed with SIGKILL, started again, merges what was written while it
    /// was gone, from its progress in the store (or again from the start, if it was killed
    /// before recording it).
    @Test(arguments: storedTypes)
    func aKilledAuthorCatchesUpWhenStartedAgain(_ type: StoreType) async throws {
        let (app, _) = try kitPair(type)
        let url = app.directory.file("notes.sqlite")
        func widgetProcess() throws -> WriterProcess {
            try WriterProcess(
                store: url, author: "widget", ["--authors", "app,widget"] + app.serverArguments, program: "CoherenceKitAuthor")
        }
        let first = try widgetProcess()
        #expect(await first.waitForLine("READY"))
        try app.insert(1)
        #expect(await first.ask("expect app 1 app 1") == "OK")
        await first.kill()  // perhaps before it recorded its progress: then it merges app 1 again
        try app.insert(2)
        let second = try widgetProcess()
        #expect(await second.waitForLine("READY"))
        try app.insert(3)  // its kit hears this one and fetches from its progress
        #expect(await second.ask("expect app 2 app 2") == "OK")
        #expect(await second.ask("expect app 3 app 3") == "OK")
        second.send("quit")
        #expect(await second.waitForLine("DONE"))
        let result = await second.finish()
        #expect(result.status == 0, "the author failed: \(result.errors)")
        #expect(try app.progress()["widget"] == app.lastNumber())
    }
}

extension KitStack {
    /// The arguments that point a `CoherenceKitAuthor` at this stack's store when it is a
    /// PostgreSQL store (`--url`; a SQLite store is the `--store` file).
    var serverArguments: [String] { configuration.location.map { ["--url", $0.absoluteString] } ?? [] }
}

extension WriterProcess {
    /// Sends a command and waits for its one-line answer.
    func ask(_ command: String) async -> String? {
        send(command)
        return await nextLine()
    }
}
