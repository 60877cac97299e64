/// Where Coherence's log messages go. The library writes nothing to standard error or
/// standard output except through the logger in ``CoherenceLogging/logger``.
///
/// Replace the default (``StandardErrorLogger`` at ``LogLevel/warning``) to route messages into
/// the app's own logging:
///
/// ```swift
/// struct AppLogger: CoherenceLogger {
///     var level: LogLevel { .info }
///     func log(_ message: LogMessage) { myLog.write("\(message.level) [\(message.category)] \(message.text)") }
/// }
/// CoherenceLogging.logger = AppLogger()
/// ```
public protocol CoherenceLogger: Sendable {
    /// The most detailed level this logger writes; Coherence does not even build the text of a
    /// more detailed message.
    var level: LogLevel { get }
    /// Writes one message. Called on whatever thread raised it; must not block for long.
    func log(_ message: LogMessage)
}

/// One message for a ``CoherenceLogger``.
public struct LogMessage: Sendable, CustomStringConvertible {
    /// How important it is (never ``LogLevel/off``).
    public var level: LogLevel
    /// The part of Coherence that wrote it: `"stack"`, `"context"`, `"store"`, …
    public var category: String
    /// The message.
    public var text: String

    /// Creates a message.
    public init(level: LogLevel, category: String, text: String) {
        self.level = level
        self.category = category
        self.text = text
    }

    /// `Coherence [level] category: text`.
    public var description: String { "Coherence [\(level)] \(category): \(text)" }
}

/// The logger every part of Coherence writes through.
///
/// ```swift
/// CoherenceLogging.logger = StandardErrorLogger(level: .off)    // silence Coherence
/// ```
public enum CoherenceLogging {
    private static let current = LockedValue<any CoherenceLogger>(StandardErrorLogger(level: .warning))

    /// The logger (default: ``StandardErrorLogger`` writing errors and warnings).
    public static var logger: any CoherenceLogger {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }

    /// Writes a message through ``logger`` when its level allows; `text` is built only then.
    package static func log(_ level: LogLevel, _ category: String, _ text: @autoclosure () -> String) {
        guard level != .off else { return }
        let logger = self.logger
        guard level <= logger.level else { return }
        logger.log(LogMessage(level: level, category: category, text: text()))
    }
}
