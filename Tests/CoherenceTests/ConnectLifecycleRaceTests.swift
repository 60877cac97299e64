import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

// A start() that arrives while a stop() is under way (another thread, an action) cannot start
// the connect: it throws instead of returning as if it had.

@Suite("Connect: start and stop while the other is under way", .timeLimit(.minutes(2)))
struct ConnectLifecycleRaceTests {
    @Test func startDuringStopThrowsAndAStartAfterwardsWorks() async throws {
        let dir = try TemporaryDirectory()
        let connect = GenericConnect<ContextStrategy.Direct>(
            name: "Race", managedObjectModel: try ManagedObjectModel(types: [Town.self, Person.self, Club.self]))
        connect.storeLocation = dir.url
        try connect.start()
        // The stop waits for the strategy's saves before it detaches: start from there.
        let outcome = LockedValue<CoherenceError?>(nil)
        let called = LockedValue(false)
        connect.willWaitForPendingSaves = { [weak connect] in
            guard let connect, !called.withLock({ $0 }) else { return }
            called.withLock { $0 = true }
            do { try connect.start() } catch let error as CoherenceError { outcome.withLock { $0 = error } } catch {}
        }
        try connect.stop()
        connect.willWaitForPendingSaves = nil
        #expect(called.withLock { $0 })
        #expect(outcome.withLock { $0?.code } == .invalidRequest)
        #expect(connect.state == .stopped)
        try connect.start()
        #expect(connect.isStarted)
        try connect.stop()
    }
}
