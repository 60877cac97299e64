/// Where a history kit's messages go: its own logger when it has one, else
/// ``CoherenceLogging`` (category `history-kit`); `level` filters them (0 none, 1 important,
/// 2 all).
struct HistoryKitLog: Sendable {
    let logger: (any PersistentHistoryTrackingKitLoggerProtocol)?
    let level: Int

    /// Logs a message of importance `importance` (1 important, 2 detail); `message` is built
    /// only when it is written.
    func callAsFunction(
        _ type: PersistentHistoryTrackingKitLogType, _ importance: Int, _ message: @autoclosure () -> String
    ) {
        guard level >= importance, importance > 0 else { return }
        if let logger {
            logger.log(type: type, message: message())
        } else {
            CoherenceLogging.log(type.coherenceLevel, "history-kit", message())
        }
    }
}
