import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// History bookkeeping that another program damaged in a SQLite store.
@Suite struct HostileHistoryStateTests {
    /// The highest deleted transaction number (`Z_HISTORYSTATE.Z_DELETEDTHROUGH`) holding text
    /// or a blob counts as no number: the current token still names the last transaction, and
    /// saves and deletes of history go on. SQLite's `max` took the text over every number, so
    /// the current token was 0 (history read again from its start) and every later save failed
    /// with a UNIQUE error on the history table.
    @Test(arguments: ["'x'", "X'01'"])
    func aDeletedThroughThatIsNoNumberIsIgnored(_ value: String) throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("history.sqlite")
        do {
            let c = try makeHistoryCoordinator(.sqlite, in: dir)
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
            try context.performAndWait {
                for n in 0..<3 {
                    HNote(context: context).code = "c\(n)"
                    try context.save()
                }
            }
            try c.remove(try #require(c.persistentStores.first))
        }
        try runForeignSQL("UPDATE Z_HISTORYSTATE SET Z_DELETEDTHROUGH = \(value)", at: url.path)
        let c = try makeHistoryCoordinator(.sqlite, in: dir)
        #expect(try c.currentPersistentHistoryToken()?.transactionNumber == 3)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        try context.performAndWait {
            HNote(context: context).code = "new"
            try context.save()
        }
        let numbers = try allHistory(c).map(\.token.transactionNumber)
        #expect(numbers == [1, 2, 3, 4])
        let third = try #require(try allHistory(c).first { $0.token.transactionNumber == 3 })
        _ = try c.execute(.deleteHistory(before: third.token))
        #expect(try allHistory(c).map(\.token.transactionNumber) == [3, 4])
        let raw = try SQLiteConnection(location: .file(url.path))
        #expect(try raw.prepare("SELECT Z_DELETEDTHROUGH FROM Z_HISTORYSTATE").rows { $0.value(0) } == [.integer(2)])
    }
}
