/// The history transactions of one store object's own saves: the number of the one its open
/// save wrote (`pending`) and of the last one it committed (`last`, its
/// `lastCommittedHistoryToken`).
package struct HistoryCommits: Sendable {
    package var pending: Int64?
    package var last: Int64?

    package init() {}

    /// The open save committed: its transaction is the last committed one.
    package mutating func committed() {
        if let pending { last = pending }
        pending = nil
    }

    /// The open save rolled back: its transaction is gone.
    package mutating func rolledBack() { pending = nil }
}
