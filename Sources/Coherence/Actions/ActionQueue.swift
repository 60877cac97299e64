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
        /// Waiters and how many running jobs each lets run on (1 for a job waiting for its own
        /// queue, as `stop()` called from inside an action does).
        var idleWaiters: [(semaphore: DispatchSemaphore, allowance: Int)] = []
        /// The most jobs seen running at once (for tests and diagnostics).
        var peak = 0
    }

    let label: String
    private let state: LockedValue<State>

    /// The queue whose job the current code runs (nil outside actions); inherited by the task
    /// an async action runs in.
    @TaskLocal static var current: ActionQueue?

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
    /// cancelled first). Called from inside one of this queue's jobs (an action that stops its
    /// connect), it waits for the others only: waiting for itself would never end.
    func waitUntilIdle() {
        let semaphore = DispatchSemaphore(value: 0)
        let allowance = ActionQueue.current === self ? 1 : 0
        let idle = state.withLock { s -> Bool in
            if s.running <= allowance && (s.pending.isEmpty || s.suspended) { return true }
            s.idleWaiters.append((semaphore, allowance))
            return false
        }
        if !idle { semaphore.wait() }
    }

    private func signalIdleIfNeeded() {
        let waiters = state.withLock { s -> [DispatchSemaphore] in
            guard s.pending.isEmpty || s.suspended else { return [] }
            let running = s.running
            let ready = s.idleWaiters.filter { running <= $0.allowance }.map(\.semaphore)
            s.idleWaiters.removeAll { running <= $0.allowance }
            return ready
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
                ActionQueue.$current.withValue(self) {
                    job.run { [self] in
                        self.state.withLock { $0.running -= 1 }
                        self.signalIdleIfNeeded()
                        self.pump()
                    }
                }
            }
        }
        signalIdleIfNeeded()
    }
}
