import Foundation

/// Deletes, each time it is called, the history that every author of its kit has merged
/// (PersistentHistoryTrackingKit's manual cleaner; from
/// ``PersistentHistoryTrackingKit/cleanerBuilder()``).
///
/// It uses its kit's progress, logger and log level and its ``PersistentHistoryTrackingKit/allAuthors``,
/// batch authors included; authors that never recorded progress are not waited for. When no
/// author recorded any, it deletes what is older than the kit's `maximumDuration`.
///
/// ```swift
/// let kit = PersistentHistoryTrackingKit(container: connect, currentAuthor: "app", allAuthors: ["app", "widget"], cleanStrategy: .none)
/// let cleaner = kit.cleanerBuilder()
/// cleaner()
/// ```
public struct PersistentHistoryTrackingKitManualCleaner: Sendable {
    let engine: HistoryKitEngine
    let authors: [String]
    let maximumDuration: TimeInterval
    /// 0: no messages; 1: errors; 2: also what was deleted.
    public var logLevel: Int

    init(engine: HistoryKitEngine, authors: [String], maximumDuration: TimeInterval) {
        self.engine = engine
        self.authors = authors
        self.maximumDuration = maximumDuration
        self.logLevel = engine.log.level
    }

    /// Cleans once; returns how many transactions were deleted.
    @discardableResult
    public func callAsFunction() -> Int {
        let cleaner = HistoryKitEngine(
            coordinator: engine.coordinator, contexts: [], currentAuthor: engine.currentAuthor, selection: engine.selection,
            book: engine.book, log: HistoryKitLog(logger: engine.log.logger, level: logLevel), clock: engine.clock)
        let anyRecorded = cleaner.trackedStores.contains { store in
            !((try? engine.book.marks(of: authors, in: store))?.isEmpty ?? true)
        }
        let fallback = anyRecorded ? nil : engine.clock().addingTimeInterval(-maximumDuration)
        return cleaner.clean(authors: authors, olderThan: fallback)
    }
}
