import Dispatch
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

@Suite("LockedValue")
struct LockedValueTests {
    /// Eight threads incrementing one dictionary entry under the lock end at the exact total
    /// (and, under the thread sanitizer, report nothing).
    @Test func concurrentIncrementsAreExclusive() {
        let counts = LockedValue([String: Int]())
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10_000 { counts.withLock { $0["n", default: 0] += 1 } }
        }
        #expect(counts.withLock { $0["n"] } == 80_000)
    }

    @Test func errorsPassThroughAndReleaseTheLock() {
        struct Failure: Error {}
        let box = LockedValue(1)
        #expect(throws: Failure.self) { try box.withLock { (_: inout Int) throws(Failure) in throw Failure() } }
        // The lock was released: taking it again does not block.
        #expect(
            box.withLock { v -> Int in
                v += 1; return v
            } == 2)
    }
}
