/// Counts and times a context collects (reported by actions).
package struct ContextStatistics: Sendable {
    package var inserts = 0
    package var updates = 0
    package var deletes = 0
    package var fetchedRows = 0
    package var fetchTime: Double = 0
    package var saveTime: Double = 0
    package var performTime: Double = 0
}
