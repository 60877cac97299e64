import Foundation

// Timing, interleaving and results, shared by the benchmark executables.

extension Array {
    /// The element at `i`, or nil when `i` is out of range.
    public subscript(safe i: Int) -> Element? { indices.contains(i) ? self[i] : nil }
}

/// Seconds spent in `body`.
@inline(never)
public func measure(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

/// One implementation of a workload: sets up what it needs (untimed) and returns the seconds of
/// the measured part.
public typealias Run = () throws -> Double

/// The result of one workload.
public struct WorkloadResult {
    public var name: String
    public var title: String
    public var times: [String: [Double]] = [:]  // implementation → seconds per repetition
    public var unit = "s"
    public var note = ""

    public init(name: String, title: String) {
        self.name = name
        self.title = title
    }

    public func median(_ impl: String) -> Double? {
        guard let t = times[impl]?.sorted(), !t.isEmpty else { return nil }
        return t.count % 2 == 1 ? t[t.count / 2] : (t[t.count / 2 - 1] + t[t.count / 2]) / 2
    }
    public func min(_ impl: String) -> Double? { times[impl]?.min() }
    public func ratio(_ a: String, _ b: String) -> Double? {
        guard let x = median(a), let y = median(b), y > 0 else { return nil }
        return x / y
    }
}

/// Runs implementations interleaved (the order rotates every repetition) so that noise on the
/// shared machine spreads over all of them.
public func interleave(_ name: String, _ title: String, reps: Int, _ all: [(String, Run)]) throws -> WorkloadResult {
    var result = WorkloadResult(name: name, title: title)
    let impls = all.filter { selectedImplementations?.contains($0.0) ?? true }
    for rep in 0..<reps {
        for k in 0..<impls.count {
            let (label, run) = impls[(k + rep) % impls.count]
            result.times[label, default: []].append(try run())
        }
    }
    return result
}

/// The implementations `--impl` selected (nil: all).
nonisolated(unsafe) public var selectedImplementations: Set<String>?

/// A fresh temporary directory, removed at exit of `body`.
public func withTemporaryDirectory<T>(_ body: (URL) throws -> T) throws -> T {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("coherence-bench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: url) }
    return try body(url)
}

/// Peak resident memory of this process in MB (Linux: VmHWM).
public func peakResidentMB() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        let kb = line.split(separator: " ").compactMap { Double($0) }.first ?? 0
        return kb / 1024
    }
    return 0
}

/// The `p`-th quantile of `values` (0 < p ≤ 1; 0 when empty), as a function of p.
public func percentiles(_ values: [Double]) -> (Double) -> Double {
    let sorted = values.sorted()
    return { p in sorted.isEmpty ? 0 : sorted[Swift.min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)] }
}
