import Foundation

/// A transaction as a store keeps it: its columns, and its changes encoded by
/// ``HistoryCoding``. The SQLite store keeps one row of these per transaction; the in-memory
/// store keeps the values.
package struct StoredHistoryTransaction: Sendable {
    package var number: Int64
    package var timestamp: Date
    package var author: String?
    package var contextName: String?
    package var processID: String
    /// The names of the entities whose objects changed, for filtering by entity.
    package var entities: [String]
    package var changeCount: Int
    package var changes: [UInt8]

    /// The `Z_ENTITIES` column: every name between bars (`|Person|Town|`), so that `instr` finds
    /// `|Person|` exactly.
    package var entitiesColumn: String { "|" + entities.joined(separator: "|") + "|" }
}
