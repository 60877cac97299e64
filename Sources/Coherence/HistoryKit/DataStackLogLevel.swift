/// The kind of a ``DataStackLogger`` message.
public enum DataStackLogLevel: String, Sendable, CaseIterable {
    /// Detail.
    case debug
    /// What the tracker did.
    case info
    /// A failure.
    case error
    /// Something unexpected the tracker handled.
    case warning
}
