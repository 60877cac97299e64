import Foundation

/// How far an author got in one store: the last transaction it processed (its number, when
/// known) and that transaction's timestamp.
struct HistoryKitMark: Sendable, Hashable {
    var transactionNumber: Int64?
    var timestamp: Date
}

/// Where a history kit keeps each author's progress.
protocol HistoryKitProgressBook: Sendable {
    /// The progress of `authors` in `store` (authors without a record are left out).
    func marks(of authors: [String], in store: PersistentStore) throws -> [String: HistoryKitMark]
    /// Records `author`'s progress in `store` (forward only).
    func record(_ mark: HistoryKitMark, author: String, in store: PersistentStore) throws
    /// Forgets `author`'s progress in `store`.
    func remove(author: String, in store: PersistentStore) throws
}

/// Progress kept in the store itself (a SQLite store's `Z_HISTORYPROGRESS` table, written in a
/// transaction of its own), readable by every process that opens the store. Stores that keep
/// no progress (in-memory ones, which only this process sees) keep it in this process.
struct StoreProgressBook: HistoryKitProgressBook {
    let coordinator: PersistentStoreCoordinator
    let clock: @Sendable () -> Date

    /// Progress of stores that keep none, by store and author (one process sees those stores).
    private static let inProcess = LockedValue<[UUID: [String: HistoryKitMark]]>([:])

    func marks(of authors: [String], in store: PersistentStore) throws -> [String: HistoryKitMark] {
        let wanted = Set(authors)
        if let all = try coordinator.historyProgress(in: store) {
            var result: [String: HistoryKitMark] = [:]
            for (author, p) in all where wanted.contains(author) {
                result[author] = HistoryKitMark(transactionNumber: p.transactionNumber, timestamp: p.timestamp)
            }
            return result
        }
        return Self.inProcess.withLock { ($0[store.identifier] ?? [:]).filter { wanted.contains($0.key) } }
    }

    func record(_ mark: HistoryKitMark, author: String, in store: PersistentStore) throws {
        guard let number = mark.transactionNumber else { return }
        let progress = HistoryProgress(transactionNumber: number, timestamp: mark.timestamp, updated: clock())
        if try coordinator.recordHistoryProgress(progress, author: author, in: store) { return }
        Self.inProcess.withLock { table in
            if let old = table[store.identifier]?[author]?.transactionNumber, old > number { return }
            table[store.identifier, default: [:]][author] = mark
        }
    }

    func remove(author: String, in store: PersistentStore) throws {
        if try coordinator.removeHistoryProgress(author: author, in: store) { return }
        Self.inProcess.withLock { _ = $0[store.identifier]?.removeValue(forKey: author) }
    }
}

/// Progress kept in `UserDefaults`, PersistentHistoryTrackingKit's way: the timestamp of each
/// author's last merged transaction under `uniqueString + author` (a `Date`), and next to it,
/// under `uniqueString + author + ".token." + store UUID`, the transaction's number, which
/// decides what is fetched. A record with a date and no number (written by PHTKit's scheme)
/// is read by date, unless the author has a number for another store: the date is then that
/// store's progress, and the author has none in this one.
struct UserDefaultsProgressBook: HistoryKitProgressBook, @unchecked Sendable {
    // @unchecked Sendable: UserDefaults is thread-safe; the value is only read and written through it.
    let defaults: UserDefaults
    let uniqueString: String

    func dateKey(_ author: String) -> String { uniqueString + author }
    func tokenKey(_ author: String, _ store: PersistentStore) -> String { uniqueString + author + ".token." + store.identifier.uuidString }

    func marks(of authors: [String], in store: PersistentStore) throws -> [String: HistoryKitMark] {
        var result: [String: HistoryKitMark] = [:]
        var keys: Dictionary<String, Any>.Keys?
        for author in authors {
            guard let date = defaults.object(forKey: dateKey(author)) as? Date else { continue }
            let number = (defaults.object(forKey: tokenKey(author, store)) as? NSNumber)?.int64Value
            if number == nil {
                // The date is one for every store: with a number for another store and none for
                // this one, it is that store's progress, and this store has none.
                let others = uniqueString + author + ".token."
                keys = keys ?? defaults.dictionaryRepresentation().keys
                if keys?.contains(where: { $0.hasPrefix(others) }) == true { continue }
            }
            result[author] = HistoryKitMark(transactionNumber: number, timestamp: date)
        }
        return result
    }

    func record(_ mark: HistoryKitMark, author: String, in store: PersistentStore) throws {
        if let number = mark.transactionNumber {
            let key = tokenKey(author, store)
            if let old = (defaults.object(forKey: key) as? NSNumber)?.int64Value, old > number { return }
            defaults.set(NSNumber(value: number), forKey: key)
        }
        defaults.set(mark.timestamp, forKey: dateKey(author))
    }

    func remove(author: String, in store: PersistentStore) throws {
        defaults.removeObject(forKey: tokenKey(author, store))
        defaults.removeObject(forKey: dateKey(author))
    }
}
