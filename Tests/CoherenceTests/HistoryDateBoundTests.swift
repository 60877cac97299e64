import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// History fetched after, and deleted before, dates at the ends of the line.
@Suite struct HistoryDateBoundTests {
    /// A date that is not a number is refused, by fetches and deletes alike, and the history
    /// is left whole: a delete before it emptied the history of SQLite and PostgreSQL stores
    /// (the in-memory store deleted nothing). Infinite dates are dates like any other.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aDateThatIsNotANumberIsRefused(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(type, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        for n in 0..<3 {
            try context.performAndWait {
                HNote(context: context).code = "n\(n)"
                try context.save()
            }
        }
        let nan = Date(timeIntervalSinceReferenceDate: .nan)
        var count = PersistentHistoryChangeRequest.fetchHistory(after: nan)
        count.resultType = .count
        for request in [PersistentHistoryChangeRequest.deleteHistory(before: nan), .fetchHistory(after: nan), count] {
            let error = #expect(throws: CoherenceError.self) { try c.execute(request) }
            #expect(error?.code == .invalidRequest, "\(request)")
        }
        #expect(try allHistory(c).count == 3)
        // (Foundation's description of a NaN date stops the process: the request's does not.)
        #expect("\(PersistentHistoryChangeRequest.deleteHistory(before: nan))".contains("nan"))

        let past = Date(timeIntervalSinceReferenceDate: -.infinity), future = Date(timeIntervalSinceReferenceDate: .infinity)
        #expect(try c.execute(.fetchHistory(after: past)).transactions.count == 3)
        #expect(try c.execute(.fetchHistory(after: future)).transactions.isEmpty)
        #expect(try c.execute(.deleteHistory(before: past)).count == 0)
        #expect(try allHistory(c).count == 3)
        #expect(try c.execute(.deleteHistory(before: future)).count == 3)
        #expect(try allHistory(c).isEmpty)
    }
}
