import Foundation
import Testing
@testable import Coherence
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Three processes add to one counter of one SQLite file at once, each fetching it anew before
/// each save, under each merge policy: every save commits or throws a `.conflict` (retried), no
/// other error escapes, and under `.error` no increment is lost. (Under the other policies a
/// fetch keeps the values of an object the context holds, as in Core Data, so increments are
/// lost by design; each write still builds on a value no lower than the process's own count.)
@Suite("Saves: three processes on one counter", .timeLimit(.minutes(3)))
struct ProcessMergePolicyTests {
    @Test(arguments: ["error", "objectTrump", "storeTrump", "overwrite", "rollback"])
    func threeProcessesIncrementOneCounter(_ policy: String) async throws {
        let dir = try TemporaryDirectory("process-merge-\(policy)")
        let url = dir.file("counter.sqlite")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [RemoteNote.self]))
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let note = RemoteNote(context: context)
            note.author = "counter"
            try context.save()
        }
        let increments = 25
        let writers = try (0..<3).map { i in
            try WriterProcess(store: url, author: "w\(i)", ["--increment", "\(increments)", "--policy", policy, "--step"])
        }
        for writer in writers { #expect(await writer.waitForLine("READY")) }
        for writer in writers { writer.send() }
        var lines: [String] = []
        for writer in writers {
            let line = await writer.nextLine()
            let outcome = await writer.finish()
            #expect(outcome.status == 0, "\(outcome.errors)")
            lines.append(line ?? "none")
        }
        #expect(
            lines.allSatisfy { $0 == "INCREMENTED \(increments) " + ($0.split(separator: " ").last.map(String.init) ?? "") }, "\(lines)")
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let value = try reader.performAndWait { try reader.fetch(FetchRequest<RemoteNote>()).map(\.sequence) }
        if policy == "error" {
            #expect(value == [3 * increments], "\(lines)")
        } else {
            #expect(value.count == 1 && value[0] >= increments && value[0] <= 3 * increments, "\(value) \(lines)")
        }
    }
}
