import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

extension HistoryKitProcessTests {
    /// Two author processes and this one save at once, many times each: every kit hands each
    /// transaction of the other authors to its merge hooks exactly once, in number order, and
    /// none of its own.
    @Test(arguments: storedTypes)
    func everyKitMergesEachTransactionOfTheOthersExactlyOnce(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let app = try KitStack(dir, author: "app", type: type)
        let authors = "app,widget,extension"
        let kit = PersistentHistoryTrackingKit(container: app.connect, currentAuthor: "app", allAuthors: authors, logLevel: 0)
        defer { kit.stop() }
        let merged = LockedValue<[Int64]>([])
        let own = LockedValue(0)
        await kit.registerMergeHook { input in
            merged.withLock { $0 += input.transactions.filter { $0.author != "app" }.map(\.transactionNumber) }
            own.withLock { $0 += input.transactions.filter { $0.author == "app" }.count }
            return .goOn
        }
        let rounds = RoundReader(kit.engine)
        func child(_ name: String) throws -> WriterProcess {
            try WriterProcess(
                store: dir.file("notes.sqlite"), author: name, ["--authors", authors] + app.serverArguments, program: "CoherenceKitAuthor")
        }
        let widget = try child("widget"), ext = try child("extension")
        for p in [widget, ext] { #expect(await p.waitForLine("READY")) }

        let count = 25
        widget.send("insert-many 1 \(count)")
        ext.send("insert-many 1 \(count)")
        for n in 1...count { try app.insert(n) }
        for p in [widget, ext] { #expect(await p.nextLine()?.hasPrefix("SAVED ") == true) }
        #expect(try app.lastNumber() == Int64(3 * count))

        // (Rounds merge in number order; each author's saves follow one another.)
        #expect(await rounds.until { merged.withLock { $0.count } >= 2 * count })
        func exactlyOnce(_ numbers: [Int64], _ who: String) {
            #expect(numbers.count == 2 * count, "\(who) merged \(numbers)")
            #expect(Set(numbers).count == numbers.count, "\(who) merged some twice: \(numbers)")
            #expect(numbers == numbers.sorted(), "\(who) merged out of order: \(numbers)")
        }
        exactlyOnce(merged.withLock { $0 }, "app")
        #expect(own.withLock { $0 } == 0)
        for (p, name) in [(widget, "widget"), (ext, "extension")] {
            let answer = await p.ask("merged \(2 * count)") ?? ""
            #expect(answer.hasPrefix("MERGED "))
            exactlyOnce(answer.dropFirst("MERGED ".count).split(separator: ",").compactMap { Int64($0) }, name)
            #expect(await p.ask("own") == "OWN 0")
            p.send("quit")
            #expect(await p.waitForLine("DONE"))
            let result = await p.finish()
            #expect(result.status == 0, "an author failed: \(result.errors)")
        }
    }
}
