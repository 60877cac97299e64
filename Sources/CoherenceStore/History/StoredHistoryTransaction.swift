import Foundation

/// A transaction as a store keeps it: its columns, and its changes encoded by
/// ``HistoryCoding``. The SQLite and PostgreSQL stores keep one row of these per transaction;
/// the in-memory store keeps the values.
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

    package init(
        number: Int64, timestamp: Date, author: String?, contextName: String?, processID: String, entities: [String],
        changeCount: Int, changes: [UInt8]
    ) {
        self.number = number
        self.timestamp = timestamp
        self.author = author
        self.contextName = contextName
        self.processID = processID
        self.entities = entities
        self.changeCount = changeCount
        self.changes = changes
    }

    /// The `Z_ENTITIES` column: every name between bars (`|Person|Town|`), so that `instr` finds
    /// `|Person|` exactly.
    package var entitiesColumn: String { "|" + entities.joined(separator: "|") + "|" }
}
