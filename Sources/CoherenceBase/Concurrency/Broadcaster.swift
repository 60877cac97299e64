import Foundation
import Synchronization

/// Hands each value to every subscriber's `AsyncStream` (a context's `events`, a coordinator's
/// `remoteChanges`).
///
/// Each ``stream()`` buffers without bound until its reader takes the values; a stream whose
/// reader stopped iterating (or was cancelled) is dropped. ``finish()`` ends every stream.
package final class Broadcaster<Element: Sendable>: Sendable {
    private let continuations = LockedValue<[UUID: AsyncStream<Element>.Continuation]>([:])
    /// Subscribers (one load tells an owner without any to skip the lock).
    @usableFromInline let count = Atomic<Int>(0)

    package init() {}

    /// A new stream of the values yielded from now on.
    package func stream() -> AsyncStream<Element> {
        let id = UUID()
        let (stream, continuation) = AsyncStream<Element>.makeStream(bufferingPolicy: .unbounded)
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            if self.continuations.withLock({ $0.removeValue(forKey: id) }) != nil {
                self.count.subtract(1, ordering: .releasing)
            }
        }
        continuations.withLock { $0[id] = continuation }
        count.add(1, ordering: .releasing)
        return stream
    }

    /// Hands `value` to every stream.
    ///
    /// Inlined up to the subscriber check: the generic body needs the metadata of its streams'
    /// types (a runtime lookup each), which a post without subscribers should not pay.
    @inlinable
    package func yield(_ value: Element) {
        guard count.load(ordering: .acquiring) > 0 else { return }
        yieldToSubscribers(value)
    }

    @usableFromInline
    func yieldToSubscribers(_ value: Element) {
        let targets = continuations.withLock { Array($0.values) }
        for c in targets { c.yield(value) }
    }

    /// Whether any stream is open.
    package var hasSubscribers: Bool { continuations.withLock { !$0.isEmpty } }

    /// How many streams are open.
    package var subscriberCount: Int { continuations.withLock { $0.count } }

    /// Ends every stream (their `for await` loops finish); later streams start open.
    package func finish() {
        let targets = continuations.withLock { Array($0.values) }
        for c in targets { c.finish() }
    }
}
