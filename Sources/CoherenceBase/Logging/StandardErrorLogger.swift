import Foundation

/// A ``CoherenceLogger`` that writes each message as one line to standard error:
/// `Coherence [error] stack: …`. The default logger, at ``LogLevel/warning``.
///
/// ```swift
/// CoherenceLogging.logger = StandardErrorLogger(level: .debug)
/// ```
public struct StandardErrorLogger: CoherenceLogger {
    /// The most detailed level written.
    public var level: LogLevel

    /// Creates a logger that writes messages up to `level`.
    public init(level: LogLevel = .warning) { self.level = level }

    public func log(_ message: LogMessage) {
        guard message.level != .off, message.level <= level else { return }
        FileHandle.standardError.write(Data((message.description + "\n").utf8))
    }
}
