/// Receives the messages of a ``PersistentHistoryTrackingKit`` or
/// ``PersistentHistoryTrackingKitManualCleaner`` (PersistentHistoryTrackingKit's logger protocol).
///
/// Without one, the kit writes through ``CoherenceLogging/logger`` (category `history-kit`).
/// The kit's `logLevel` decides which messages are sent at all: 0 none, 1 the important ones
/// (start, stop, errors, recoveries), 2 every one.
///
/// ```swift
/// struct KitLogger: PersistentHistoryTrackingKitLoggerProtocol {
///     func log(type: PersistentHistoryTrackingKitLogType, message: String) { print("[\(type.rawValue.uppercased())] : \(message)") }
/// }
/// ```
public protocol PersistentHistoryTrackingKitLoggerProtocol: Sendable {
    /// Writes one message.
    func log(type: PersistentHistoryTrackingKitLogType, message: String)
}
