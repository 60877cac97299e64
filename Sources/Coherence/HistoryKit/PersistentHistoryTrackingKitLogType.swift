/// The kind of a message a ``PersistentHistoryTrackingKit`` logs (PersistentHistoryTrackingKit's
/// `PersistentHistoryTrackingKitLogType`).
public enum PersistentHistoryTrackingKitLogType: String, Sendable, CaseIterable {
    /// Detail: a notification arrived, what was fetched, what was merged.
    case debug
    /// What the kit did: started, stopped, cleaned.
    case info
    /// Something worth noticing that the kit handled (progress that had expired).
    case notice
    /// A fetch, merge, progress write or clean failed.
    case error
    /// A failure the kit cannot work around.
    case fault

    /// The level this type has in ``CoherenceLogging`` (used when the kit has no logger of its own).
    var coherenceLevel: LogLevel {
        switch self {
        case .debug: return .debug
        case .info, .notice: return .info
        case .error, .fault: return .error
        }
    }
}
