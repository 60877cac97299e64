import BenchmarkSupport
import Coherence
import Foundation

/// Query generations: W2 in a pinned context ("coherence") against an unpinned one
/// ("baseline"); and what pinning, advancing and sharing a generation cost, in microseconds.
extension Workloads {
    /// W2 (fetch every person, read every property) in a context pinned to a generation.
    static func g2(_ o: Options) throws -> WorkloadResult {
        let n = o.n(100_000)
        return try withTemporaryDirectory { dir in
            let c = try coherenceStore(dir.appendingPathComponent("c.sqlite"))
            try fillCoherence(c, n: n)
            func run(pinned: Bool) throws -> Double {
                let context = backgroundContext(c)
                return try context.performAndWait {
                    if pinned { try context.setQueryGeneration(from: .current) }
                    return try measure {
                        var s = 0
                        for p in try context.fetch(FetchRequest<BPerson>()) { s &+= touch(p) }
                        sink &+= s
                    }
                }
            }
            var result = try interleave(
                "G2", "W2 pinned: fetch \(n), read every property", reps: o.repetitions,
                [("coherence", { try run(pinned: true) }), ("baseline", { try run(pinned: false) })])
            result.note = "coherence: pinned to a generation (taken at the fetch); baseline: unpinned"
            return result
        }
    }

    /// 1,000 cycles of pin (`.current`, taken at the next read), one small read, and advance
    /// (`reset()`), against the same reads unpinned; and 1,000 times sharing a pinned token
    /// with a second context and unpinning it.
    static func g3(_ o: Options) throws -> WorkloadResult {
        let cycles = 1_000
        return try withTemporaryDirectory { dir in
            let c = try coherenceStore(dir.appendingPathComponent("c.sqlite"))
            try fillCoherence(c, n: 1_000)
            let one = FetchRequest<BPerson>(fetchLimit: 1)
            func cycle(pinned: Bool) throws -> Double {
                let context = backgroundContext(c)
                return try context.performAndWait {
                    try measure {
                        for _ in 0..<cycles {
                            if pinned { try context.setQueryGeneration(from: .current) }
                            sink &+= try context.fetch(one).count
                            context.reset()  // advances a pinned context
                        }
                    }
                }
            }
            let holder = backgroundContext(c)
            let token = try holder.performAndWait { () throws -> QueryGenerationToken? in
                try holder.setQueryGeneration(from: .current)
                sink &+= try holder.fetch(one).count
                return holder.queryGenerationToken
            }
            let sharer = backgroundContext(c)
            var shareTimes: [Double] = []
            var result = try interleave(
                "G3", "pin + read + advance, \(cycles) times", reps: o.repetitions,
                [
                    ("coherence", { try cycle(pinned: true) }),
                    ("baseline", { try cycle(pinned: false) }),
                    (
                        "share",
                        {
                            let t = try sharer.performAndWait {
                                try measure {
                                    for _ in 0..<cycles {
                                        try sharer.setQueryGeneration(from: token)
                                        try sharer.setQueryGeneration(from: nil)
                                    }
                                }
                            }
                            shareTimes.append(t)
                            return t
                        }
                    )
                ])
            let pinned = result.median("coherence") ?? 0, unpinned = result.median("baseline") ?? 0
            shareTimes.sort()
            let share = shareTimes.isEmpty ? 0 : shareTimes[shareTimes.count / 2]
            result.note = String(
                format: "pin + advance: %.1f µs each (%.1f µs a pinned cycle, %.1f µs unpinned); sharing a token + unpinning: %.2f µs",
                (pinned - unpinned) / Double(cycles) * 1e6, pinned / Double(cycles) * 1e6, unpinned / Double(cycles) * 1e6,
                share / Double(cycles) * 1e6)
            return result
        }
    }
}
