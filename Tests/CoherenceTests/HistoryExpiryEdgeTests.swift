import Foundation
import Testing
@testable import Coherence
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// A reader's token into history that was partly deleted must be refused as expired, also when
/// the deletion happened before a migration of the store, and when it deleted by date while a
/// later transaction carried an earlier timestamp (another process's clock behind).
@Suite struct HistoryExpiryEdgeTests {
    @Test(arguments: storedTypes, MigrationHistoryTests.Way.allCases)
    func aTokenIntoHistoryDeletedBeforeAMigrationStaysExpired(_ type: StoreType, _ way: MigrationHistoryTests.Way) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir, "h")
        let tokens = try MigrationHistoryTests.fill(url, deletingAll: false)
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: try MigrationHistoryTests.v1())
            let store = try coordinator.addPersistentStore(type: type, at: url, options: StoreOptions(persistentHistoryTracking: true))
            #expect(try coordinator.execute(PersistentHistoryChangeRequest.deleteHistory(before: tokens[2])).count == 2)
            try coordinator.remove(store)
        }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try MigrationHistoryTests.v2())
        let store = try coordinator.addPersistentStore(type: type, at: url, options: try MigrationHistoryTests.options(way))
        defer { try? coordinator.remove(store) }
        do throws(CoherenceError) {
            _ = try coordinator.execute(PersistentHistoryChangeRequest.fetchHistory(after: tokens[0]))
            Issue.record("a token into deleted history was read")
        } catch {
            #expect(error.code == .historyTokenExpired)
        }
        let rest = try coordinator.execute(PersistentHistoryChangeRequest.fetchHistory(after: tokens[1])).transactions
        #expect(rest.map(\.token) == [tokens[2]])
    }

    /// Transaction 3 of 4 written with a timestamp 1,000 s before the others: deleting before a
    /// date between them deletes it alone, and every reader that had not read it is expired.
    @Test(arguments: storedTypes)
    func deletingByDateAroundASkewedTimestampExpiresTheReadersItSkipped(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try #require(try dir.storeURL(type, "skew"))
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        try coordinator.addPersistentStore(type: type, at: url, options: StoreOptions(persistentHistoryTracking: true))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        for name in ["A", "B", "C", "D"] {
            try context.performAndWait {
                Town(context: context).name = name
                try context.save()
            }
        }
        let all = try coordinator.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil)).transactions
        try #require(all.count == 4)
        let skew = "UPDATE Z_HISTORYTRANSACTION SET Z_TIMESTAMP = Z_TIMESTAMP - 1000 WHERE Z_PK = \(all[2].token.transactionNumber)"
        if type == .sqlite {
            try runForeignSQL(skew, at: url.path)
        } else {
            let connection = try PostgreSQLTestServer.connection()
            _ = try connection.execute("SET search_path TO \"\(PostgreSQLTestServer.schema(of: url))\"")
            _ = try connection.execute(skew)
        }
        let between = all[0].timestamp.addingTimeInterval(-500)
        #expect(
            try coordinator.execute(PersistentHistoryChangeRequest.fetchHistory(after: between)).transactions.map(\.token)
                == [all[0], all[1], all[3]].map(\.token))
        #expect(try coordinator.execute(PersistentHistoryChangeRequest.deleteHistory(before: between)).count == 1)
        for reader in all.prefix(2) {
            do throws(CoherenceError) {
                _ = try coordinator.execute(PersistentHistoryChangeRequest.fetchHistory(after: reader.token))
                Issue.record("a reader that skipped the deleted transaction was not expired")
            } catch {
                #expect(error.code == .historyTokenExpired)
            }
        }
        #expect(
            try coordinator.execute(PersistentHistoryChangeRequest.fetchHistory(after: all[2].token)).transactions.map(\.token) == [
                all[3].token
            ])
    }
}
