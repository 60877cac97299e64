import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// Idle timeouts at the ends of the line.
@Suite struct QueryGenerationIdleTimeoutTests {
    enum Timeout: String, CaseIterable, CustomTestStringConvertible {
        case infinity, huge, notANumber
        var testDescription: String { rawValue }
        var value: TimeInterval {
            switch self {
            case .infinity: .infinity
            case .huge: 1e12
            case .notANumber: .nan
            }
        }
    }

    /// A timeout the clock never reaches — `.infinity` (keep snapshots, as Core Data does), one
    /// past what the clock counts in nanoseconds, or one that is not a number — releases no
    /// snapshot. The coordinator's next save stopped the process (a conversion to `UInt64`
    /// that overflowed).
    @Test(arguments: Timeout.allCases)
    func aTimeoutTheClockNeverReachesReleasesNothing(_ timeout: Timeout) throws {
        let f = try QueryGenerationTests.Fixture(.inMemory)
        let now = f.movableClock()
        f.coordinator.queryGenerationIdleTimeout = timeout.value
        let view = try f.pinnedContext("view")
        let token = view.queryGenerationToken
        now.withLock { $0 += 1_000_000 * 1_000_000_000 }  // a million seconds later
        try f.insertElsewhere("Dee")
        #expect(f.coordinator.queryGenerations.liveCount == 1)
        try view.performAndWait { () throws in
            #expect(try view.count(for: FetchRequest<Person>()) == 3)
            #expect(view.queryGenerationToken == token)
        }
    }

    /// A negative timeout releases an unused snapshot at the next check, as zero does.
    @Test func aNegativeTimeoutReleasesAtTheNextCheck() throws {
        let f = try QueryGenerationTests.Fixture(.inMemory)
        let now = f.movableClock()
        f.coordinator.queryGenerationIdleTimeout = -.infinity
        let view = try f.pinnedContext("view")
        now.withLock { $0 += 1_000_000_000 }
        try f.insertElsewhere("Dee")
        #expect(f.coordinator.queryGenerations.liveCount == 0)
        try view.performAndWait { () throws in #expect(try view.count(for: FetchRequest<Person>()) == 4) }
    }
}
