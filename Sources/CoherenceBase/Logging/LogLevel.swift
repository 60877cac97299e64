/// How important a log message is, from ``error`` (least detailed) to ``debug`` (most).
///
/// A logger's level is the most detailed level it writes: a logger at ``warning`` writes errors
/// and warnings; one at ``off`` writes nothing.
///
/// ```swift
/// CoherenceLogging.logger = StandardErrorLogger(level: .info)
/// ```
public struct LogLevel: Hashable, Comparable, Sendable, CustomStringConvertible {
    private enum Kind: Int, Sendable { case off, error, warning, info, debug }
    private let kind: Kind

    /// Nothing is written (as a logger's level only; messages never have it).
    public static let off = LogLevel(kind: .off)
    /// Something failed and data or work may be affected (a change that could not be written).
    public static let error = LogLevel(kind: .error)
    /// Something unexpected that Coherence recovered from.
    public static let warning = LogLevel(kind: .warning)
    /// What Coherence did (stores attached and detached, migrations, merges).
    public static let info = LogLevel(kind: .info)
    /// Detail for debugging Coherence itself.
    public static let debug = LogLevel(kind: .debug)

    /// The levels from least to most detailed.
    public static let allLevels: [LogLevel] = [.off, .error, .warning, .info, .debug]

    /// Whether `lhs` is less detailed than `rhs` (``off`` < ``error`` < … < ``debug``).
    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.kind.rawValue < rhs.kind.rawValue }

    /// The level's name, for example `warning`.
    public var description: String {
        switch kind {
        case .off: return "off"
        case .error: return "error"
        case .warning: return "warning"
        case .info: return "info"
        case .debug: return "debug"
        }
    }
}
