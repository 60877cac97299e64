import Dispatch
import Foundation
import Synchronization

/// A coordinator's pinned query generations: it numbers them, finds one by token, and releases
/// each when its last holder lets go, or when it stays unused longer than the idle timeout (the
/// rule that bounds what a forgotten pin costs: a held SQLite read transaction stops WAL
/// checkpoints from completing, so the log grows while it is held).
package final class QueryGenerationRegistry: Sendable {
    /// Names this registry (and so its coordinator) in its tokens.
    package let identifier = UUID()
    private let state = LockedValue<State>(State())
    /// `state.live.count`, stored under the lock after every change: lets ``releaseIdle()``,
    /// which every save calls, return without a lock or a clock read when no generation lives.
    private let liveGenerations = Atomic<Int>(0)
    /// The clock idle times are measured with (a test hook: tests set their own clock instead
    /// of waiting).
    package let clock = LockedValue(Clock())
    /// How long a generation may go without a read before it is released (seconds).
    let idleTimeout = LockedValue<TimeInterval>(300)

    private struct State {
        var lastNumber: UInt64 = 0
        var live: [UInt64: QueryGeneration] = [:]
    }

    /// A clock in nanoseconds. (A struct: a function stored directly in a generic `LockedValue`
    /// would be re-wrapped in a reabstraction thunk on every `withLock`, each call slower.)
    package struct Clock: Sendable {
        package var now: @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds }
    }

    /// Now, on ``clock``.
    func now() -> UInt64 { clock.withLock { $0.now }() }

    /// A new generation of `snapshots`, held once.
    func add(_ snapshots: [UUID: any StoreSnapshot]) -> QueryGeneration {
        let now = self.now()
        return state.withLock { s in
            s.lastNumber += 1
            let g = QueryGeneration(registry: identifier, number: s.lastNumber, snapshots: snapshots, now: now)
            s.live[s.lastNumber] = g
            liveGenerations.store(s.live.count, ordering: .relaxed)
            return g
        }
    }

    /// The generation a token names, held once more.
    /// - Throws: `.invalidQueryGenerationToken` for a token of another coordinator or of a
    ///   released generation.
    func retain(_ token: QueryGenerationToken) throws(CoherenceError) -> QueryGeneration {
        guard case .snapshot(let registry, let number) = token.kind else {
            throw CoherenceError(.invalidRequest, "QueryGenerationToken.current names no snapshot.")
        }
        guard registry == identifier else {
            throw CoherenceError(
                .invalidQueryGenerationToken,
                "\(token) belongs to another coordinator; a context reads only its own coordinator's generations.")
        }
        guard let g = state.withLock({ $0.live[number] }), g.retain() else {
            throw CoherenceError(
                .invalidQueryGenerationToken,
                "\(token) names a query generation that was released (no context held it any more, or it was idle too long).")
        }
        g.noteUse(at: now())
        return g
    }

    /// One holder of `generation` fewer; the last one releases it.
    func release(_ generation: QueryGeneration) {
        guard generation.dropHolder() else { return }
        state.withLock { s in
            _ = s.live.removeValue(forKey: generation.number)
            liveGenerations.store(s.live.count, ordering: .relaxed)
        }
        generation.closeSnapshots()
    }

    /// Releases the generations no read has used for longer than the idle timeout; their
    /// holders move to a fresh generation at their next read. Returns how many it released.
    @discardableResult
    func releaseIdle() -> Int {
        // A generation added meanwhile is looked at by the next call.
        guard liveGenerations.load(ordering: .relaxed) > 0 else { return 0 }
        let timeout = idleTimeout.withLock { $0 }
        // A timeout the nanosecond clock never reaches (infinite, too large) or that is not a
        // number releases nothing; a negative one releases at the next check, as zero does.
        let nanoseconds = max(0, timeout) * 1e9
        guard !timeout.isNaN, nanoseconds < Double(UInt64.max) else { return 0 }
        let now = self.now()
        let limit = UInt64(nanoseconds)
        guard now > limit else { return 0 }
        let since = now - limit
        let idle = state.withLock { s -> [QueryGeneration] in
            let idle = s.live.values.filter { $0.isIdle(since: since) && $0.markReleased() }
            for g in idle { s.live[g.number] = nil }
            liveGenerations.store(s.live.count, ordering: .relaxed)
            return idle
        }
        for g in idle {
            g.closeSnapshots()
            CoherenceLogging.log(
                .warning, "generations",
                "released \(g.token), unused for more than \(timeout) s; its contexts move to the current generation at their next read")
        }
        return idle.count
    }

    /// Releases every generation (the coordinator is going away).
    func releaseAll() {
        let all = state.withLock { s -> [QueryGeneration] in
            defer {
                s.live = [:]
                liveGenerations.store(0, ordering: .relaxed)
            }
            return Array(s.live.values)
        }
        for g in all where g.markReleased() { g.closeSnapshots() }
    }

    /// The generations held now.
    package var liveCount: Int { state.withLock { $0.live.count } }
}
