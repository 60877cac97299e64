import Foundation

/// The contexts whose executor the current thread holds: a block of theirs runs on this thread,
/// further down its stack (a `performAndWait` of another context, called from that block, runs
/// in between). Another `performAndWait` of one of them on this thread runs its block at once,
/// as on the executor: waiting for the executor would wait for itself (`DispatchQueue.sync` on
/// a queue the thread already runs stops the process).
///
/// Kept per thread (`Thread.threadDictionary`), never per task: a task started from a block
/// runs elsewhere and does not hold the executor.
final class HeldExecutors {
    private var tokens: [ObjectIdentifier] = []
    private static let key = "Coherence.HeldExecutors"

    /// The current thread's list.
    private static var current: HeldExecutors {
        let dictionary = Thread.current.threadDictionary
        if let held = dictionary[key] as? HeldExecutors { return held }
        let held = HeldExecutors()
        dictionary[key] = held
        return held
    }

    /// Whether the current thread runs a block of the context of `token`.
    static func holds(_ token: ContextToken) -> Bool {
        guard let held = Thread.current.threadDictionary[key] as? HeldExecutors else { return false }
        return held.tokens.contains(ObjectIdentifier(token))
    }

    /// Runs `body` (a block of the context of `token`, on its executor) with the executor noted
    /// as the current thread's.
    @inline(__always)
    static func holding<T, E: Error>(_ token: ContextToken, _ body: () throws(E) -> T) throws(E) -> T {
        let held = current
        held.tokens.append(ObjectIdentifier(token))
        defer { held.tokens.removeLast() }
        return try body()
    }
}

@available(*, unavailable) extension HeldExecutors: Sendable {}
