/// Receives a ``PersistentHistoryTracker``'s messages (RCDataKit's `DataStackLogger`). Without
/// one, the tracker writes through ``CoherenceLogging``.
///
/// ```swift
/// struct PrintLogger: DataStackLogger {
///     func log(type: DataStackLogLevel, message: String) { print("CORE DATA \(type.rawValue.uppercased()): \(message)") }
/// }
/// ```
public protocol DataStackLogger: Sendable {
    /// Writes one message.
    func log(type: DataStackLogLevel, message: String)
}

/// A ``DataStackLogger`` seen as the history kit's logger.
struct DataStackLoggerAdapter: PersistentHistoryTrackingKitLoggerProtocol {
    let logger: any DataStackLogger

    func log(type: PersistentHistoryTrackingKitLogType, message: String) {
        switch type {
        case .debug: logger.log(type: .debug, message: message)
        case .info: logger.log(type: .info, message: message)
        case .notice: logger.log(type: .warning, message: message)
        case .error, .fault: logger.log(type: .error, message: message)
        }
    }
}
