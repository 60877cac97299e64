import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The latency workloads' second process: this executable started again in a writer mode, asked
// for one commit per line of its standard input, answering with the commit's times.

/// Nanoseconds of the system-wide monotonic clock (the same clock in every process).
public func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// User + system CPU seconds of this process.
public func cpuSeconds() -> Double {
    var usage = rusage()
    #if os(Linux)
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    #else
    getrusage(RUSAGE_SELF, &usage)
    #endif
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// Lines from a file handle, read as they arrive (blocking).
public final class LineReader {
    private let handle: FileHandle
    private var buffer = Data()
    public init(_ handle: FileHandle) { self.handle = handle }

    /// The next line, or nil at the end of the stream.
    public func next() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer = Data(buffer[(newline + 1)...])
                return line
            }
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            buffer.append(chunk)
        }
    }
}

/// The times (monotonic clock) at which a notification was posted, and a semaphore signalled
/// each time.
public final class Arrivals: @unchecked Sendable {
    // @unchecked Sendable: `times` is only used under `lock`; `observer` is set once, in init.
    private let lock = NSLock()
    private var times: [UInt64] = []
    public let arrived = DispatchSemaphore(value: 0)
    private var observer: (any NSObjectProtocol)?

    public init(of name: Notification.Name, from object: AnyObject) {
        observer = NotificationCenter.default.addObserver(forName: name, object: object, queue: nil) { [weak self] _ in
            self?.note(monotonicNanoseconds())
        }
    }

    private func note(_ time: UInt64) {
        lock.withLock { times.append(time) }
        arrived.signal()
    }

    /// The latest time noted, removed.
    public func popLast() -> UInt64? { lock.withLock { times.popLast() } }

    deinit { if let observer { NotificationCenter.default.removeObserver(observer) } }
}

/// What ``childLatencies(child:commits:pause:arrivals:)`` measured, in seconds.
public struct ChildLatencies {
    /// From the start of each heard save to its arrival.
    public var fromStart: [Double] = []
    /// From the return of each heard save to its arrival.
    public var fromReturn: [Double] = []
    /// Each save's own time.
    public var saves: [Double] = []
    /// Saves not heard within 10 s.
    public var missed = 0
}

/// Runs this executable again as a writer with `arguments` and asks it for `commits` commits, one
/// at a time (each once the one before was heard, `pause` seconds later); the writer answers
/// `READY` once, then `T <start ns> <end ns>` (monotonic clock) per commit once its save returned.
/// Nil when the child did not start.
public func childLatencies(child arguments: [String], commits: Int, pause: Double, arrivals: Arrivals) throws -> ChildLatencies? {
    let child = Process()
    child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    child.arguments = arguments
    let input = Pipe(), output = Pipe()
    child.standardInput = input
    child.standardOutput = output
    try child.run()
    let lines = LineReader(output.fileHandleForReading)
    guard lines.next() == "READY" else { return nil }
    var result = ChildLatencies()
    for _ in 0..<commits {
        // One commit at a time: the next is asked for once this one was heard.
        if pause > 0 { Thread.sleep(forTimeInterval: pause) }
        input.fileHandleForWriting.write(Data("go\n".utf8))
        let heard = arrivals.arrived.wait(timeout: .now() + 10) == .success
        guard let line = lines.next() else { break }
        let parts = line.split(separator: " ")
        guard parts.count == 3, let start = UInt64(parts[1]), let end = UInt64(parts[2]) else { break }
        result.saves.append(Double(end - start) / 1e9)
        guard heard, let at = arrivals.popLast() else {
            result.missed += 1
            continue
        }
        result.fromStart.append(Double(at &- start) / 1e9)
        // A notification can arrive before the writer's clock read after its save returned.
        result.fromReturn.append(at > end ? Double(at - end) / 1e9 : 0)
    }
    try input.fileHandleForWriting.close()
    child.waitUntilExit()
    return result
}
