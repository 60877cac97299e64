import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// Fault probes on the PostgreSQL store's newest paths: errors from migrations, history and
/// batch requests never show the URL's password; statement timeouts in batch requests and in
/// saves with history are typed errors that change nothing.
@Suite struct PostgreSQLFaultProbeTests {
    static let password = "hunter2secret"

    /// A store URL in a new schema of `dir` with a password (trust authentication ignores it)
    /// and `items` added.
    func passwordURL(_ dir: TemporaryDirectory, _ name: String = "store", _ items: [String: String] = [:]) throws -> URL {
        var components = try #require(URLComponents(url: try dir.postgreSQLURL(name), resolvingAgainstBaseURL: false))
        components.password = Self.password
        components.queryItems =
            (components.queryItems ?? []) + items.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) }
        return try #require(components.url)
    }

    /// Every text of an error a caller can see, including its underlying errors.
    func texts(_ error: CoherenceError?) -> [String] {
        guard let error else { return [] }
        var texts = [String(describing: error), error.localizedDescription, error.message]
        texts += [error.store, error.destinationStore, error.sql, error.entityName, error.propertyName].compactMap { $0 }
        texts += error.underlyingErrors.flatMap { [String(describing: $0), $0.localizedDescription] }
        return texts
    }

    func expectNoPassword(_ error: CoherenceError?, _ comment: Comment) {
        #expect(error != nil, comment)
        for text in texts(error) { #expect(!text.contains(Self.password), comment) }
    }

    func itemModel(count type: AttributeType, optional: Bool = false) throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Item",
                properties: [
                    AttributeDescription(name: "name", type: .string, defaultValue: ""),
                    AttributeDescription(name: "count", type: type, isOptional: optional)
                ])
        ])
    }

    /// A migration that cannot be inferred fails without the password in the error.
    @Test(.postgreSQLServer) func migrationErrorsShowNoPassword() throws {
        let dir = try TemporaryDirectory()
        let url = try passwordURL(dir)
        let v1 = PersistentStoreCoordinator(managedObjectModel: try itemModel(count: .integer64, optional: true))
        try v1.remove(try v1.addPersistentStore(type: .postgreSQL, at: url))
        let v2 = PersistentStoreCoordinator(managedObjectModel: try itemModel(count: .string, optional: true))
        let error = #expect(throws: CoherenceError.self) { try v2.addPersistentStore(type: .postgreSQL, at: url) }
        #expect(error?.code == .migrationNotInferable || error?.code == .storeIncompatible)
        expectNoPassword(error, "migration")
    }

    /// A staged migration whose stage throws, and one whose inferred remainder cannot be
    /// inferred, fail on the migration copy without the password in the error; the store keeps
    /// its first version.
    @Test(.postgreSQLServer) func stagedMigrationErrorsShowNoPassword() throws {
        let dir = try TemporaryDirectory()
        let url = try passwordURL(dir, "staged")
        try StagedMigrationTests.makeStore(try passwordURL(dir, "staged"))  // without the timeout (see above)
        let before = try StagedMigrationTests.blobsAtFirstVersion(url)
        let throwing = StagedMigrationManager([
            try StagedMigrationTests.decodeStage(throwing: true),
            LightweightMigrationStage([try StagedMigrationTests.v2(), try StagedMigrationTests.v3()])
        ])
        let failed = #expect(throws: CoherenceError.self) {
            try withMigrationStore(try StagedMigrationTests.v3(), at: url, options: StoreOptions(stagedMigrationManager: throwing)) { _ in }
        }
        #expect(failed?.code == .migrationFailed)
        expectNoPassword(failed, "staged migration: throwing stage")
        let v3 = try StagedMigrationTests.v3AgeAsText()
        let remainder = StagedMigrationManager([try StagedMigrationTests.decodeStage()])
        let notInferable = #expect(throws: CoherenceError.self) {
            try withMigrationStore(v3, at: url, options: StoreOptions(stagedMigrationManager: remainder)) { _ in }
        }
        #expect(notInferable?.code == .migrationNotInferable)
        expectNoPassword(notInferable, "staged migration: remainder not inferable")
        #expect(try StagedMigrationTests.blobsAtFirstVersion(url) == before)
    }

    /// History without tracking and batch requests that violate a uniqueness constraint fail
    /// without the password in the error.
    @Test(.postgreSQLServer) func historyAndBatchErrorsShowNoPassword() throws {
        let dir = try TemporaryDirectory()
        let plain = PersistentStoreCoordinator(managedObjectModel: try makeHistoryModel())
        try plain.addPersistentStore(type: .postgreSQL, at: try passwordURL(dir, "plain"))
        let untracked = #expect(throws: CoherenceError.self) { try plain.execute(.fetchHistory(after: nil)) }
        expectNoPassword(untracked, "history of a store without tracking")

        let url = try passwordURL(dir, "tracked")
        let c = PersistentStoreCoordinator(managedObjectModel: try makeHistoryModel())
        try c.addPersistentStore(type: .postgreSQL, at: url, options: historyOptions)
        try c.execute(BatchInsertRequest<HNote>(objects: [["code": "a", "rank": 1], ["code": "b", "rank": 2]]))
        let reopened = PersistentStoreCoordinator(managedObjectModel: try makeHistoryModel())
        let required = #expect(throws: CoherenceError.self) { try reopened.addPersistentStore(type: .postgreSQL, at: url) }
        #expect(required?.code == .historyTrackingRequired)
        expectNoPassword(required, "history tracking required")
        // A token of another store is refused.
        let foreign = PersistentHistoryToken(storeIdentifier: UUID(), transactionNumber: 1)
        let token = #expect(throws: CoherenceError.self) { try c.execute(.fetchHistory(after: foreign)) }
        expectNoPassword(token, "foreign history token")
        let before = try allHistory(c).count
        let unique = #expect(throws: CoherenceError.self) {
            try c.execute(BatchUpdateRequest<HNote>(predicate: #Predicate { $0.rank > 0 }, propertiesToUpdate: ["code": "same"]))
        }
        expectNoPassword(unique, "batch update")
        #expect(try allHistory(c).count == before)
    }

    /// Makes every write of an `HNote` whose body is `slow` wait in the server (a trigger that
    /// calls `pg_sleep`), so that `statement_timeout` ends it.
    func slowDownNotes(_ url: URL) throws {
        let schema = PostgreSQLTestServer.schema(of: url)
        let c = try PostgreSQLTestServer.connection()
        let q = SQLDialect.postgreSQL.quote
        // The note table is the one with a body column (the tags' join table also names notes).
        let found = try c.execute(
            """
            SELECT table_name::text, column_name::text FROM information_schema.columns \
            WHERE table_schema = $1 AND lower(table_name) LIKE '%hnote%' AND lower(column_name) LIKE '%body%'
            """,
            [.text(schema)])
        guard found.rows.count == 1, case .text(let name)? = found.rows.first?.first,
            case .text(let body)? = found.rows.first?.last
        else { throw CoherenceError(.invalidRequest, "No single note table with a body column: \(found.rows.count) found.") }
        try c.execute(
            """
            CREATE FUNCTION \(q(schema)).coherence_slow() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN IF NEW.\(q(body)) = 'slow' THEN PERFORM pg_sleep(30); END IF; RETURN NEW; END $$
            """)
        try c.execute(
            """
            CREATE TRIGGER coherence_slow BEFORE INSERT OR UPDATE ON \(q(schema)).\(q(name)) \
            FOR EACH ROW EXECUTE FUNCTION \(q(schema)).coherence_slow()
            """)
    }

    /// A batch update and a save with history that run past `statement_timeout` fail with
    /// `.timeout` and change nothing: no rows, no history transaction; history numbering goes on
    /// without a gap and later saves work.
    @Test(.postgreSQLServer) func statementTimeoutsInBatchesAndHistorySavesChangeNothing() throws {
        let dir = try TemporaryDirectory()
        // The store is made first without the timeout: making its tables and functions can take
        // longer than that on a loaded machine.
        let maker = PersistentStoreCoordinator(managedObjectModel: try makeHistoryModel())
        try maker.remove(try maker.addPersistentStore(type: .postgreSQL, at: try passwordURL(dir, "store"), options: historyOptions))
        let url = try passwordURL(dir, "store", ["statement_timeout": "200ms"])
        let c = PersistentStoreCoordinator(managedObjectModel: try makeHistoryModel())
        try c.addPersistentStore(type: .postgreSQL, at: url, options: historyOptions)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        try context.performAndWait {
            let note = HNote(context: context)
            note.code = "a"
            try context.save()
        }
        try slowDownNotes(url)
        let before = try PostgreSQLTestServer.dump(schema: PostgreSQLTestServer.schema(of: url))
        let numbers = try allHistory(c).map(\.transactionNumber)
        let first = try #require(numbers.first)
        #expect(numbers.count == 1)

        let batch = #expect(throws: CoherenceError.self) {
            try c.execute(BatchUpdateRequest<HNote>(predicate: #Predicate { $0.code == "a" }, propertiesToUpdate: ["body": "slow"]))
        }
        #expect(batch?.code == .timeout)
        expectNoPassword(batch, "batch timeout")
        let save = #expect(throws: CoherenceError.self) {
            try context.performAndWait {
                let note = HNote(context: context)
                note.code = "b"
                note.body = "slow"
                try context.save()
            }
        }
        #expect(save?.code == .timeout)
        expectNoPassword(save, "save timeout")
        #expect(try PostgreSQLTestServer.dump(schema: PostgreSQLTestServer.schema(of: url)) == before)
        #expect(try allHistory(c).map(\.transactionNumber) == numbers)

        // Later saves and batches work, and history numbering continues without a gap.
        try context.performAndWait {
            context.rollback()
            let note = HNote(context: context)
            note.code = "c"
            try context.save()
        }
        try c.execute(BatchUpdateRequest<HNote>(predicate: #Predicate { $0.code == "c" }, propertiesToUpdate: ["body": "fast"]))
        let after = try allHistory(c).map(\.transactionNumber)
        #expect(after == numbers + [first + 1, first + 2])
        let codes = try context.performAndWait { try context.fetch(FetchRequest<HNote>()).map(\.code).sorted() }
        #expect(codes == ["a", "c"])
    }

    /// The name of the table of `entity` in `schema` (the only table whose name contains it).
    func table(_ entity: String, in schema: String) throws -> String {
        let found = try PostgreSQLTestServer.connection().execute(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1 AND lower(table_name) LIKE $2",
            [.text(schema), .text("%" + entity.lowercased() + "%")])
        guard found.rows.count == 1, case .text(let name)? = found.rows.first?.first else {
            throw CoherenceError(.invalidRequest, "No single table of \(entity) in \(schema): \(found.rows.count) found.")
        }
        return name
    }

    /// A `statement_timeout` that ends a statement of a staged migration — while the store is
    /// copied (another client holds a lock on a table of the store), or in a stage on the copy
    /// (another client reads the copy) — fails the migration with `.migrationFailed`, the
    /// server's timeout in its underlying errors and no password; the store keeps its first
    /// version and every row; a copy left behind (its drop timed out too) is dropped by the next
    /// migration, which migrates the store.
    @Test(.postgreSQLServer) func statementTimeoutsInStagedMigrationsLeaveTheOldVersion() throws {
        let dir = try TemporaryDirectory()
        let url = try passwordURL(dir, "staged", ["statement_timeout": "300ms"])
        let schema = PostgreSQLTestServer.schema(of: url)
        let copySchema = PostgreSQLMigrationCopy.copyName(of: schema)
        try StagedMigrationTests.makeStore(try passwordURL(dir, "staged"))  // without the timeout (see above)
        let before = try StagedMigrationTests.blobsAtFirstVersion(url)
        #expect(before.count == 2)
        let q = SQLDialect.postgreSQL.quote
        let blocker = try PostgreSQLTestServer.connection()
        func stages(_ will: (@Sendable (ManagedObjectContext) throws -> Void)? = nil) throws -> StagedMigrationManager {
            var decode = try StagedMigrationTests.decodeStage()
            decode.willMigrateHandler = will
            return StagedMigrationManager([
                decode, LightweightMigrationStage([try StagedMigrationTests.v2(), try StagedMigrationTests.v3()])
            ])
        }
        func timedOut(_ error: CoherenceError?) -> Bool {
            var errors: [any Error] = error.map { [$0] } ?? []
            while let next = errors.popLast() {
                if (next as? PostgreSQLError)?.isTimeout == true { return true }
                if let coherence = next as? CoherenceError { errors += coherence.underlyingErrors }
            }
            return false
        }

        // While the store is copied: the copy's lock against writers waits for another client's lock.
        let students = try table("Student", in: schema)
        try blocker.execute("BEGIN")
        try blocker.execute("LOCK TABLE \(q(schema)).\(q(students)) IN EXCLUSIVE MODE")
        let copying = #expect(throws: CoherenceError.self) {
            try withMigrationStore(try StagedMigrationTests.v3(), at: url, options: StoreOptions(stagedMigrationManager: try stages())) {
                _ in
            }
        }
        try blocker.execute("ROLLBACK")
        #expect(copying?.code == .migrationFailed)
        #expect(timedOut(copying), "\(String(describing: copying))")
        expectNoPassword(copying, "staged migration: timeout while copying")
        #expect(try StagedMigrationTests.blobsAtFirstVersion(url) == before)
        #expect(try !PostgreSQLTestServer.schemaExists(copySchema))

        // In a stage on the copy: its migration waits for another client reading the copy; the
        // copy's drop then times out too, and the copy stays until the next migration.
        let reading = LockedValue(false)
        let readCopy: @Sendable (ManagedObjectContext) throws -> Void = { _ in
            let copied = try table("Student", in: copySchema)
            try blocker.execute("BEGIN")
            try blocker.execute("SELECT count(*) FROM \(q(copySchema)).\(q(copied))")
            reading.withLock { $0 = true }
        }
        let staging = #expect(throws: CoherenceError.self) {
            try withMigrationStore(
                try StagedMigrationTests.v3(), at: url, options: StoreOptions(stagedMigrationManager: try stages(readCopy))
            ) { _ in }
        }
        #expect(reading.withLock { $0 })
        try blocker.execute("ROLLBACK")
        #expect(staging?.code == .migrationFailed)
        #expect(timedOut(staging), "\(String(describing: staging))")
        expectNoPassword(staging, "staged migration: timeout in a stage")
        #expect(try StagedMigrationTests.blobsAtFirstVersion(url) == before)

        // The next migration drops what is left of the copy and migrates.
        let names = try withMigrationStore(
            try StagedMigrationTests.v3(), at: url, options: StoreOptions(stagedMigrationManager: try stages())
        ) {
            context in
            try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")).compactMap { try $0.value(forKey: "name") as? String }
                .sorted()
        }
        #expect(names == ["Ann", "Ben"])
        #expect(try !PostgreSQLTestServer.schemaExists(copySchema))
    }
}
