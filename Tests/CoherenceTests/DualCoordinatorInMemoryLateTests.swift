import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// DualCoordinator.md: a store in memory cannot be shared, so one attached after the writer
/// coordinator exists is not opened there. An importer context's save of its objects is a typed
/// error that writes nothing; the view context still uses the store.
@Suite struct DualCoordinatorInMemoryLateTests {
    @Test func aStoreInMemoryAttachedAfterTheWriterExistsIsNotTheImportersStore() throws {
        let dir = try TemporaryDirectory()
        let connect = GenericConnect<ContextStrategy.DualCoordinator>(name: "HR", bundle: .module)
        connect.storeLocation = dir.url
        try connect.attachPersistentStores(for: [StoreConfiguration(name: "PersistentData", type: .sqlite)])
        try connect.start()
        #expect(connect.strategy.importerContext().persistentStoreCoordinator !== connect.persistentStoreCoordinator)
        try connect.attachPersistentStores(for: [StoreConfiguration(name: "TransientData", type: .inMemory)])
        let importer = connect.strategy.importerContext()
        try importer.performAndWait { () throws in
            let department = try importer.insertNewObject(forEntityName: "Department")
            try department.setValue("SALES", forKey: "code")
            let session = try importer.insertNewObject(forEntityName: "Session")
            try session.setValue("t", forKey: "token")
            #expect(throws: CoherenceError.self) { try importer.save() }
            importer.delete(session)
            try importer.save()
        }
        let view = connect.viewContext
        try view.performAndWait { () throws in
            #expect(try view.count(for: FetchRequest<ManagedObject>(entityName: "Session")) == 0)
            #expect(try view.count(for: FetchRequest<ManagedObject>(entityName: "Department")) == 1)
            let session = try view.insertNewObject(forEntityName: "Session")
            try session.setValue("v", forKey: "token")
            try view.save()
            #expect(try view.count(for: FetchRequest<ManagedObject>(entityName: "Session")) == 1)
        }
        try connect.stop()
    }
}
