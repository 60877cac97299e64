import Dispatch
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// A query generation pinned while another process is stopped inside its save (rows and history
/// written, COMMIT not run) and then killed with SIGKILL: the generation shows the committed
/// rows only, before and after this process saves more; the current state and the history
/// token count this process's saves after the killed one's earlier saves; another coordinator
/// opens the file with the same rows.
@Suite("Query generations: a writer killed inside its save", .timeLimit(.minutes(3)))
struct KilledWriterGenerationTests {
    @Test func aGenerationPinnedWhileAWriterIsKilledInsideItsSave() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("notes.sqlite")
        let doomed = try WriterProcess(store: url, author: "doomed", ["--history", "--inserts", "3", "--hang-before-commit"])
        #expect(await doomed.waitForLine("COMMITTING 4 4"))
        let c = try remoteCoordinator(url, history: true)
        let pinned = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        try pinned.performAndWait {
            try pinned.setQueryGeneration(from: .current)
            _ = try pinned.count(for: FetchRequest<RemoteNote>())
        }
        let token = try c.currentPersistentHistoryToken()
        await doomed.kill()
        try insertNote(c, author: "after")
        try insertNote(c, author: "after", sequence: 2)
        #expect(try noteCount(c) == 5)
        try pinned.performAndWait {
            let n = try pinned.count(for: FetchRequest<RemoteNote>())
            #expect(n == 3)
            let notes = try pinned.fetch(FetchRequest<RemoteNote>())
            #expect(notes.count == 3)
            #expect(notes.allSatisfy { $0.author == "doomed" })
        }
        #expect(token?.transactionNumber == 3)
        #expect(try c.currentPersistentHistoryToken()?.transactionNumber == 5)
        // A second process opens it after the kill.
        let other = try remoteCoordinator(url, history: true)
        #expect(try noteCount(other) == 5)
    }
}
