import BenchmarkSupport
import Coherence
import Foundation

/// Persistent history: W1, W4 and W6 with history on ("coherence") against the same workload
/// with history off ("baseline"), interleaved; and a fetch of the history of 100,000 changes.
extension Workloads {
    static let historyOn = StoreOptions(persistentHistoryTracking: true)
    static let historyNote = "coherence: history on; baseline: history off"

    static func h1(_ o: Options) throws -> WorkloadResult {
        let n = o.n(100_000)
        var result = try interleave(
            "H1", "W1 with history: insert \(n), one save", reps: o.repetitions,
            [
                ("coherence", { try coherenceInserts(n, savingEach: false, options: historyOn) }),
                ("baseline", { try coherenceInserts(n, savingEach: false) })
            ])
        result.note = historyNote
        return result
    }

    static func h4(_ o: Options) throws -> WorkloadResult {
        let n = o.n(100_000), k = o.n(10_000)
        return try withTemporaryDirectory { dir in
            let tracked = try coherenceStore(dir.appendingPathComponent("h.sqlite"), options: historyOn)
            try fillCoherence(tracked, n: n)
            let plain = try coherenceStore(dir.appendingPathComponent("c.sqlite"))
            try fillCoherence(plain, n: n)
            var round = 0.0
            var result = try interleave(
                "H4", "W4 with history: change \(k), save", reps: o.repetitions,
                [
                    (
                        "coherence",
                        {
                            round += 1
                            return try coherenceChangeScores(tracked, k: k, round: round)
                        }
                    ),
                    (
                        "baseline",
                        {
                            round += 1
                            return try coherenceChangeScores(plain, k: k, round: round)
                        }
                    )
                ])
            result.note = historyNote
            return result
        }
    }

    static func h6(_ o: Options) throws -> WorkloadResult {
        let k = o.n(10_000)
        var result = try interleave(
            "H6", "W6 with history: \(k) single saves", reps: o.repetitions,
            [
                ("coherence", { try coherenceInserts(k, savingEach: true, options: historyOn) }),
                ("baseline", { try coherenceInserts(k, savingEach: true) })
            ])
        result.note = historyNote
        return result
    }

    /// Fetches every transaction, with its changes, of a store whose history holds 100,000
    /// inserts in 100 saves of 1,000, and reads each change's object ID and type.
    static func h7(_ o: Options) throws -> WorkloadResult {
        let n = o.n(100_000)
        let saves = max(1, n / 1_000)
        return try withTemporaryDirectory { dir in
            let c = try coherenceStore(dir.appendingPathComponent("h.sqlite"), options: historyOn)
            for s in 0..<saves { try fillCoherence(c, n: n / saves, offset: s * (n / saves)) }
            var result = try interleave(
                "H7", "fetch the history of \(n) changes", reps: o.repetitions,
                [
                    (
                        "coherence",
                        {
                            try measure {
                                var s = 0, count = 0
                                let history = try c.execute(.fetchHistory(after: nil))
                                for t in history.transactions {
                                    for change in t.changes ?? [] {
                                        s &+= change.changeType.rawValue &+ change.changedObjectID.hashValue
                                        count += 1
                                    }
                                }
                                sink &+= s
                                if count != saves * (n / saves) { print("H7: \(count) changes read, not \(saves * (n / saves))") }
                            }
                        }
                    )
                ])
            result.note = "\(saves) transactions of \(n / saves) inserts"
            return result
        }
    }
}
