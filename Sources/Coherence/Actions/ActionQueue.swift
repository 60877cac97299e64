import Dispatch

/// A FIFO queue running at most `width` actions at a time on Dispatch's global queue (width 1:
/// a serial queue). Suspending holds queued actions; running ones finish.
final class ActionQueue: Sendable {
    struct Job: Sendable {
        let proxy: ActionProxy
        /// Runs the action and calls `done` when it finished.
        let run: @Sendable (_ done: @escaping @Sendable () -> Void) -> Void
    }

    private struct State {
        var width: Int
        var pending: [Job] = []
        var running = 0
        var suspended = false
        var idleWaiters: [DispatchSemaphore] = []
        /// The most jobs seen running at once (for tests and diagnostics).
        var peak = 0
    }

    let label: String
    private let state: LockedValue<State>

    init(label: String, width: Int) {
        self.label = label
        self.state = LockedValue(State(width: max(1, width)))
    }

    var width: Int {
        get { state.withLock { $0.width } }
        set { state.withLock { $0.width = max(1, newValue) }; pump() }
    }

    var peakConcurrency: Int { state.withLock { $0.peak } }
    var runningCount: Int { state.withLock { $0.running } }

    func enqueue(_ job: Job) {
        job.proxy.markPending()
        job.proxy.dequeue.withLock {
            $0 = { [weak self, weak proxy = job.proxy] in
                guard let self, let proxy else { return false }
                return self.remove(proxy)
            }
        }
        state.withLock { $0.pending.append(job) }
        pump()
    }

    /// Removes a queued job; false when it already started.
    func remove(_ proxy: ActionProxy) -> Bool {
        let removed = state.withLock { s -> Bool in
            guard let i = s.pending.firstIndex(where: { $0.proxy === proxy }) else { return false }
            s.pending.remove(at: i)
            return true
        }
        if removed { signalIdleIfNeeded() }
        return removed
    }

    func setSuspended(_ suspended: Bool) {
        state.withLock { $0.suspended = suspended }
        if !suspended { pump() }
    }

    /// The proxies still queued.
    var pendingProxies: [ActionProxy] { state.withLock { $0.pending.map(\.proxy) } }

    /// Blocks until nothing runs and nothing is queued (queued jobs are expected to have been
    /// cancelled first).
    func waitUntilIdle() {
        let semaphore = DispatchSemaphore(value: 0)
        let idle = state.withLock { s -> Bool in
            if s.running == 0 && (s.pending.isEmpty || s.suspended) { return true }
            s.idleWaiters.append(semaphore)
            return false
        }
        if !idle { semaphore.wait() }
    }

    private func signalIdleIfNeeded() {
        let waiters = state.withLock { s -> [DispatchSemaphore] in
            guard s.running == 0 && (s.pending.isEmpty || s.suspended) else { return [] }
            defer { s.idleWaiters = [] }
            return s.idleWaiters
        }
        for w in waiters { w.signal() }
    }

    private func pump() {
        while true {
            let job = state.withLock { s -> Job? in
                guard !s.suspended, s.running < s.width, !s.pending.isEmpty else { return nil }
                s.running += 1
                s.peak = max(s.peak, s.running)
                return s.pending.removeFirst()
            }
            guard let job else { break }
            // A serial queue of its own per job rather than `DispatchQueue.global()`: serial
            // queues run on Dispatch's overcommitting threads, so actions that block (a
            // synchronous web-service call) never starve the global pool, which on Linux has
            // one thread per core and grows slowly. `width` still bounds how many run at once.
            DispatchQueue(label: "Coherence.actions.\(label)").async {
                job.run { [self] in
                    self.state.withLock { $0.running -= 1 }
                    self.signalIdleIfNeeded()
                    self.pump()
                }
            }
        }
        signalIdleIfNeeded()
    }
}
