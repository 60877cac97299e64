/// What a store reports after a batch request.
package struct StoreBatchResult: Sendable {
    /// The number of rows the request named (the length of `objectIDs` when it lists them).
    package var count = 0
    /// The rows the request named, in order: each inserted row (or, for a row that met a stored
    /// one on a uniqueness constraint and updated or kept it, that stored row), each updated
    /// row, each deleted row the request matched (not the rows delete rules removed).
    package var objectIDs: [ObjectID] = []
    /// Every row the request changed, delete rules included, with how it changed: what history
    /// records and what contexts merge.
    package var changes: [BatchChange] = []

    package init() {}

    /// Appends another store's result.
    package mutating func append(_ other: StoreBatchResult) {
        count += other.count
        objectIDs += other.objectIDs
        changes += other.changes
    }
}
