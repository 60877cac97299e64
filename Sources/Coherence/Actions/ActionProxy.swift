import Dispatch
import Foundation

/// A handle on an action the connect runs: its state, outcome, statistics and cancellation.
///
/// ```swift
/// let proxy = try connect.execute(SyncProducts()) { proxy in
///     print(proxy.state, proxy.completionStatus, proxy.statistics)
/// }
/// proxy.cancel()                 // any time
/// try await proxy.value          // or: await proxy.finished, proxy.waitUntilFinished()
/// ```
///
/// Every property can be read from any thread.
public final class ActionProxy: Sendable, CustomStringConvertible {
    /// Where the action is in its life.
    public enum State: Sendable, Equatable, CustomStringConvertible {
        /// Created, not yet queued.
        case created
        /// Queued, waiting for its turn.
        case pending
        /// Running.
        case executing
        /// Done (whatever the outcome).
        case finished
        /// The state's name, for example `executing`.
        public var description: String {
            switch self {
            case .created: return "created"
            case .pending: return "pending"
            case .executing: return "executing"
            case .finished: return "finished"
            }
        }
    }

    /// How the action ended.
    public enum CompletionStatus: Sendable, Equatable, CustomStringConvertible {
        /// Not finished yet.
        case unknown
        /// Finished without error.
        case successful
        /// Threw an error (see ``ActionProxy/error``).
        case failed
        /// Cancelled (before it ran, or while running; an error it threw is kept).
        case canceled
        /// The status's name, for example `successful`.
        public var description: String {
            switch self {
            case .unknown: return "unknown"
            case .successful: return "successful"
            case .failed: return "failed"
            case .canceled: return "canceled"
            }
        }
    }

    /// The action.
    public let action: any Action

    struct Inner {
        var state: State = .created
        var status: CompletionStatus = .unknown
        var error: ErrorBox?
        var statistics = ActionStatistics()
        /// Whether a runner (or a cancel before running) took charge of finishing.
        var claimed = false
        var cancelRequested = false
        var task: Task<Void, Never>?
        var completion: (@Sendable (ActionProxy) -> Void)?
        var waiters: [CheckedContinuation<Void, Never>] = []
        /// The finish notification was posted and the completion block called: waiting ends.
        var settled = false
    }

    private let inner = LockedValue(Inner())
    private let group = DispatchGroup()
    /// Removes the proxy from its queue when cancelled before running.
    let dequeue = LockedValue<(@Sendable () -> Bool)?>(nil)
    /// Posts notifications for the connect.
    let notifier: ActionNotifier

    init(action: any Action, completion: (@Sendable (ActionProxy) -> Void)?, notifier: ActionNotifier) {
        self.action = action
        self.notifier = notifier
        group.enter()
        inner.withLock { $0.completion = completion }
    }

    /// The current state.
    public var state: State { inner.withLock { $0.state } }
    /// The outcome (``CompletionStatus/unknown`` until finished).
    public var completionStatus: CompletionStatus { inner.withLock { $0.status } }
    /// The error the action threw, if any (kept even when the action was cancelled).
    public var error: (any Error)? { inner.withLock { $0.error?.error } }
    /// Times and, for entity actions, the context's counts.
    public var statistics: ActionStatistics { inner.withLock { $0.statistics } }
    /// Whether cancellation was requested.
    public var isCancelled: Bool { inner.withLock { $0.cancelRequested || $0.status == .canceled } }

    /// The action's type, state and status, for example `<ActionProxy SyncCatalog finished successful>`.
    public var description: String {
        let (state, status) = inner.withLock { ($0.state, $0.status) }
        return "<ActionProxy \(type(of: action)) \(state) \(status)>"
    }

    /// Cancels the action. Before it runs: it never runs and ends canceled. While it runs: its
    /// `cancel()` is called (once) and it ends canceled whatever it then returns or throws.
    /// After it finished: nothing changes.
    public func cancel() {
        enum Step { case nothing, finishUnrun, cancelRunning(Task<Void, Never>?) }
        let step = inner.withLock { s -> Step in
            switch s.state {
            case .finished:
                return .nothing
            case .executing:
                guard !s.cancelRequested else { return .nothing }
                s.cancelRequested = true
                return .cancelRunning(s.task)
            case .created, .pending:
                if s.claimed {
                    // A runner just took it: treat as cancel while running.
                    guard !s.cancelRequested else { return .nothing }
                    s.cancelRequested = true
                    return .cancelRunning(s.task)
                }
                s.claimed = true
                s.cancelRequested = true
                return .finishUnrun
            }
        }
        switch step {
        case .nothing:
            return
        case .cancelRunning(let task):
            // The task first, so an action that wakes up in its cancel() sees Task.isCancelled.
            task?.cancel()
            action.cancel()
        case .finishUnrun:
            let remove = dequeue.withLock { $0 }
            _ = remove?()
            DispatchQueue.global().async {
                self.markExecuting()
                self.finish(error: nil)
            }
        }
    }

    /// Blocks until the action finished (its finish notification was posted and its completion
    /// block returned). Do not call it from the completion block.
    public func waitUntilFinished() { group.wait() }

    /// Blocks until the action finished or `timeout` passed; returns whether it finished.
    public func waitUntilFinished(timeout: DispatchTime) -> Bool { group.wait(timeout: timeout) == .success }

    /// Waits until the action finished (its finish notification was posted and its completion
    /// block returned).
    public var finished: Void {
        get async {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let done = inner.withLock { s -> Bool in
                    if s.settled { return true }
                    s.waiters.append(c)
                    return false
                }
                if done { c.resume() }
            }
        }
    }

    /// Waits until the action finished; throws its error, or `CancellationError` when it was
    /// cancelled without an error.
    public var value: Void {
        get async throws {
            await finished
            let (status, error) = inner.withLock { ($0.status, $0.error?.error) }
            if let error { throw error }
            if status == .canceled { throw CancellationError() }
        }
    }

    // MARK: Running (used by the connect's queues)

    func markPending() {
        inner.withLock { if $0.state == .created { $0.state = .pending } }
    }

    /// Takes charge of running; false when the proxy was cancelled before it ran.
    func begin() -> Bool {
        let ok = inner.withLock { s -> Bool in
            guard !s.claimed else { return false }
            s.claimed = true
            return true
        }
        if ok { markExecuting() }
        return ok
    }

    private func markExecuting() {
        inner.withLock { s in
            s.state = .executing
            s.statistics.startTime = Date()
        }
        notifier.post(.didStartExecuting, self)
    }

    /// Starts the task an async action runs in and remembers it (so cancellation reaches it).
    /// The task is made and recorded under the lock: a `cancel()` from inside the running
    /// action (which needs the lock) always finds it.
    func runTask(_ body: @escaping @Sendable () async -> Void) {
        inner.withLock { s in
            let task = Task(operation: body)
            s.task = task
            if s.cancelRequested { task.cancel() }
        }
    }

    /// Records the context statistics of an entity action.
    func record(_ context: ContextStatistics) {
        inner.withLock { $0.statistics.add(context) }
    }

    /// Finishes: sets the outcome, posts ActionDidFinishExecuting, calls the completion block
    /// once and wakes waiters.
    func finish(error: (any Error)?) {
        let completion = inner.withLock { s -> (@Sendable (ActionProxy) -> Void)? in
            s.error = error.map(ErrorBox.init)
            s.status = s.cancelRequested ? .canceled : (error == nil ? .successful : .failed)
            s.statistics.finishTime = Date()
            s.state = .finished
            s.task = nil
            let c = s.completion
            s.completion = nil
            return c
        }
        notifier.post(.didFinishExecuting, self)
        completion?(self)
        // Waiting ends only now, so `await finished` (like waitUntilFinished()) returns after the
        // notification and the completion block, even when it starts after state became finished.
        let waiters = inner.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.settled = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiters { w.resume() }
        group.leave()
    }
}

/// Times of an action and, for entity actions, what its context did.
public struct ActionStatistics: Sendable, Equatable, CustomStringConvertible {
    /// When the action started executing.
    public var startTime: Date?
    /// When it finished.
    public var finishTime: Date?
    /// Objects inserted by successful saves.
    public var inserts = 0
    /// Objects updated by successful saves.
    public var updates = 0
    /// Objects deleted by successful saves.
    public var deletes = 0
    /// Rows returned by fetches.
    public var fetches = 0
    /// Time spent fetching, in seconds.
    public var fetchTime: TimeInterval = 0
    /// Time spent saving, in seconds.
    public var saveTime: TimeInterval = 0
    /// Time inside outermost `perform`/`performAndWait` blocks, in seconds.
    public var performTime: TimeInterval = 0

    /// Finish minus start, or 0 until both exist.
    public var executionTime: TimeInterval {
        guard let s = startTime, let f = finishTime else { return 0 }
        return f.timeIntervalSince(s)
    }

    /// Time in perform blocks that was neither fetching nor saving.
    public var otherTime: TimeInterval { max(0, performTime - fetchTime - saveTime) }

    /// Empty statistics.
    public init() {}

    mutating func add(_ c: ContextStatistics) {
        inserts += c.inserts
        updates += c.updates
        deletes += c.deletes
        fetches += c.fetchedRows
        fetchTime += c.fetchTime
        saveTime += c.saveTime
        performTime += c.performTime
    }

    /// The times (in milliseconds) and counts on one line.
    public var description: String {
        func ms(_ t: TimeInterval) -> String { String(format: "%.1f ms", t * 1000) }
        return "execution \(ms(executionTime)); inserts \(inserts), updates \(updates), deletes \(deletes), fetched rows \(fetches); "
            + "fetch \(ms(fetchTime)), save \(ms(saveTime)), perform \(ms(performTime)), other \(ms(otherTime))"
    }
}
