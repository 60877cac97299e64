import BenchmarkSupport
import Foundation

/// Command-line options.
struct Options {
    var scale = 1.0
    var repetitions = 5
    var only: Set<String>?
    var w9Child = false
    /// The store of R1's writer process (this executable started again as process A).
    var r1Child: String?
    /// The store of K1's writer process.
    var k1Child: String?
    var implementations: Set<String>?

    static func parse(_ args: [String]) -> Options {
        var o = Options()
        var i = 1
        while i < args.count {
            switch args[i] {
            case "--scale": i += 1; o.scale = Double(args[safe: i] ?? "") ?? 1
            case "--repetitions": i += 1; o.repetitions = max(1, Int(args[safe: i] ?? "") ?? 5)
            case "--only": i += 1; o.only = Set((args[safe: i] ?? "").split(separator: ",").map { $0.uppercased() })
            case "--w9-child": o.w9Child = true
            case "--r1-child": i += 1; o.r1Child = args[safe: i]
            case "--k1-child": i += 1; o.k1Child = args[safe: i]
            case "--impl": i += 1; o.implementations = Set((args[safe: i] ?? "").split(separator: ",").map { $0.lowercased() })
            case "--help", "-h":
                print(
                    """
                    usage: CoherenceBenchmarks [--scale X] [--repetitions N] [--only W1,W3,...]
                      --scale X        multiply every N by X (default 1: 100,000 objects)
                      --repetitions N  repetitions per implementation (default 5)
                      --only LIST      run a subset of W1…W11, H1,H4,H6,H7 (history), B1, B2 (batch), R1, R1P, R2 (remote changes),
                       G2, G3 (query generations), K1, K2, K3 (history kit),
                       F1 (controller diff), D1, D2 (dual coordinators), M1, M2 (migrations)
                      --impl LIST      run only some implementations (coherence,raw,grdb,baseline,singles), e.g. to profile
                    """)
                exit(0)
            default: break
            }
            i += 1
        }
        return o
    }

    func n(_ base: Int) -> Int { max(1, Int(Double(base) * scale)) }
    func wants(_ w: String) -> Bool { only?.contains(w) ?? true }
}

/// Prints the table and the JSON line.
func report(_ results: [WorkloadResult], options: Options) {
    func f(_ v: Double?, _ unit: String) -> String {
        guard let v else { return "-" }
        return unit == "MB" ? String(format: "%.1f MB", v) : String(format: "%.2f ms", v * 1000)
    }
    func r(_ v: Double?) -> String { v.map { String(format: "%.2f×", $0) } ?? "-" }
    print("")
    print(
        "workload                                              Coherence (med / min)      raw SQLite (med)   GRDB (med)     C/raw   C/GRDB")
    for w in results {
        let label = "\(w.name) \(w.title)".padding(toLength: 52, withPad: " ", startingAt: 0)
        let c = "\(f(w.median("coherence"), w.unit)) / \(f(w.min("coherence"), w.unit))".padding(toLength: 27, withPad: " ", startingAt: 0)
        let raw = f(w.median("raw"), w.unit).padding(toLength: 19, withPad: " ", startingAt: 0)
        let grdb = f(w.median("grdb"), w.unit).padding(toLength: 14, withPad: " ", startingAt: 0)
        var note = w.note
        if let b = w.median("baseline") {
            note +=
                "; baselines \(f(b, w.unit)) / \(f(w.median("singles"), w.unit)): "
                + "C/baseline \(r(w.ratio("coherence", "baseline"))) / \(r(w.ratio("coherence", "singles")))"
        }
        print(
            "\(label)  \(c)\(raw)\(grdb)\(r(w.ratio("coherence", "raw")).padding(toLength: 8, withPad: " ", startingAt: 0))\(r(w.ratio("coherence", "grdb")))\(note.isEmpty ? "" : "  " + note)"
        )
    }
    var json: [String: Any] = [
        "date": ISO8601DateFormatter().string(from: Date()), "scale": options.scale, "repetitions": options.repetitions
    ]
    var items: [[String: Any]] = []
    for w in results {
        var item: [String: Any] = ["workload": w.name, "unit": w.unit]
        for impl in ["coherence", "raw", "grdb", "baseline", "singles"] {
            if let m = w.median(impl) { item["\(impl)_median"] = m }
            if let m = w.min(impl) { item["\(impl)_min"] = m }
        }
        if let x = w.ratio("coherence", "raw") { item["ratio_raw"] = x }
        if let x = w.ratio("coherence", "grdb") { item["ratio_grdb"] = x }
        if let x = w.ratio("coherence", "baseline") { item["ratio_baseline"] = x }
        if let x = w.ratio("coherence", "singles") { item["ratio_singles"] = x }
        items.append(item)
    }
    json["results"] = items
    if let data = try? JSONSerialization.data(withJSONObject: json, options: [.sortedKeys]), let text = String(data: data, encoding: .utf8)
    {
        print("")
        print("JSON: \(text)")
    }
}
