import Foundation
import Testing
@testable import Coherence
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// A store with persistent history migrates, inferred at open or staged, keeping its history:
/// the transactions and their tokens, the last number handed out (so numbering goes on after
/// the migration, even when every transaction was deleted) and the authors' progress.
@Suite("Migrations keep persistent history")
struct MigrationHistoryTests {
    enum Way: String, CaseIterable, CustomStringConvertible {
        case inferred, staged
        var description: String { rawValue }
    }

    static func v1() throws -> ManagedObjectModel {
        try ManagedObjectModel(
            entities: [EntityDescription(name: "Town", properties: [AttributeDescription(name: "name", type: .string)])],
            versionIdentifier: "1")
    }

    /// `name` renamed to `title`, and a new optional `country`.
    static func v2() throws -> ManagedObjectModel {
        try ManagedObjectModel(
            entities: [
                EntityDescription(
                    name: "Town",
                    properties: [
                        AttributeDescription(name: "title", type: .string, renamingIdentifier: "name"),
                        AttributeDescription(name: "country", type: .string, isOptional: true)
                    ])
            ], versionIdentifier: "2")
    }

    static func options(_ way: Way) throws -> StoreOptions {
        StoreOptions(
            persistentHistoryTracking: true,
            stagedMigrationManager: way == .staged ? StagedMigrationManager([LightweightMigrationStage([try v1(), try v2()])]) : nil)
    }

    /// A version-1 store with three saves' history, the author "reader" having read the second;
    /// with `deletingAll`, every transaction is deleted after. Returns the three tokens.
    static func fill(_ url: URL, deletingAll: Bool) throws -> [PersistentHistoryToken] {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try v1())
        let store = try coordinator.addPersistentStore(
            type: migrationStoreType(url), at: url, options: StoreOptions(persistentHistoryTracking: true))
        defer { try? coordinator.remove(store) }
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        for name in ["Oslo", "Rome", "Lima"] {
            try context.performAndWait {
                try insertObject(context, "Town", ["name": name])
                try context.save()
            }
        }
        let tokens = try coordinator.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil)).transactions.map(\.token)
        try coordinator.recordHistoryProgress(
            HistoryProgress(transactionNumber: tokens[1].transactionNumber, timestamp: Date(), updated: Date()), author: "reader",
            in: store)
        if deletingAll { _ = try coordinator.execute(PersistentHistoryChangeRequest.deleteHistory(before: Date.distantFuture)) }
        return tokens
    }

    /// Saves one more town in the migrated store; returns the history after it.
    static func saveAndReadHistory(_ coordinator: PersistentStoreCoordinator) throws -> [PersistentHistoryTransaction] {
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            try insertObject(context, "Town", ["title": "Kyiv", "country": "UA"])
            try context.save()
        }
        return try coordinator.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil)).transactions
    }

    /// A filled version-1 store in `dir`, opened at version 2 the given way (so migrated).
    static func migrated(_ type: StoreType, _ way: Way, in dir: TemporaryDirectory, deletingAll: Bool) throws -> (
        PersistentStoreCoordinator, PersistentStore, [PersistentHistoryToken]
    ) {
        let url = try migrationStoreURL(type, dir, "h")
        let tokens = try fill(url, deletingAll: deletingAll)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try v2())
        return (coordinator, try coordinator.addPersistentStore(type: type, at: url, options: try options(way)), tokens)
    }

    @Test(arguments: storedTypes, Way.allCases)
    func historyTokensAndProgressSurvive(_ type: StoreType, _ way: Way) throws {
        let dir = try TemporaryDirectory()
        let (coordinator, store, tokens) = try Self.migrated(type, way, in: dir, deletingAll: false)
        defer { try? coordinator.remove(store) }
        let before = try coordinator.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil)).transactions
        #expect(before.map(\.token) == tokens)
        #expect(before.map { $0.changes?.count ?? 0 } == [1, 1, 1])
        #expect(try coordinator.historyProgress(in: store)?["reader"]?.transactionNumber == tokens[1].transactionNumber)
        let after = try Self.saveAndReadHistory(coordinator)
        #expect(after.count == 4 && Array(after.prefix(3).map(\.token)) == tokens)
        #expect(after.last?.token.transactionNumber == tokens[2].transactionNumber + 1)
        #expect(after.last?.token.storeIdentifier == tokens[2].storeIdentifier)
    }

    @Test(arguments: storedTypes, Way.allCases)
    func numberingGoesOnAfterEveryTransactionWasDeleted(_ type: StoreType, _ way: Way) throws {
        let dir = try TemporaryDirectory()
        let (coordinator, store, tokens) = try Self.migrated(type, way, in: dir, deletingAll: true)
        defer { try? coordinator.remove(store) }
        #expect(try coordinator.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil)).transactions.isEmpty)
        let after = try Self.saveAndReadHistory(coordinator)
        #expect(after.map(\.token.transactionNumber) == [tokens[2].transactionNumber + 1])
        #expect(try coordinator.historyProgress(in: store)?["reader"]?.transactionNumber == tokens[1].transactionNumber)
    }
}
