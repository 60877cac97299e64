import Dispatch
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// Abstract: the key and its uniqueness constraint are declared here, for every vehicle.
class MhVehicle: ManagedObject {
    @Attribute(.unique) var vin: String = ""
    @Attribute var maker: String = ""
    override class var isAbstractEntity: Bool { self == MhVehicle.self }
}

final class MhCar: MhVehicle {
    @Attribute var seats: Int = 0
}

final class MhTruck: MhVehicle {
    @Attribute var load: Double = 0
}

/// Merges cars in an action and reports the summary or the error.
final class MergeCars: EntityAction {
    typealias ManagedObjectType = MhCar
    let payload: [[String: any Sendable]]
    let outcome = LockedValue<Result<MergeSummary, any Error>?>(nil)
    init(_ payload: [[String: any Sendable]]) { self.payload = payload }
    func execute(context: ActionContext) throws {
        do {
            let summary = try context.merge(objects: payload, for: MhCar.self)
            outcome.withLock { $0 = .success(summary) }
        } catch {
            outcome.withLock { $0 = .failure(error) }
            throw error
        }
    }
}

private func vehicles(_ coordinator: PersistentStoreCoordinator) throws -> [String] {
    let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
    return try context.performAndWait {
        try context.fetch(FetchRequest<MhVehicle>()).map { v -> String in
            if let c = v as? MhCar { return "car \(c.vin) \(c.maker) \(c.seats)" }
            if let t = v as? MhTruck { return "truck \(t.vin) \(t.maker) \(t.load)" }
            return "? \(v.vin)"
        }.sorted()
    }
}

@Suite("Actions: merging sub-entities keyed by an abstract parent", .timeLimit(.minutes(2)))
struct MergeHierarchyProbeTests {
    func connect(_ dir: TemporaryDirectory) throws -> GenericConnect<ContextStrategy.Mixed> {
        let connect = GenericConnect<ContextStrategy.Mixed>(
            name: "Hierarchy", managedObjectModel: try ManagedObjectModel(types: [MhVehicle.self, MhCar.self, MhTruck.self]))
        connect.storeLocation = dir.url
        try connect.start()
        return connect
    }

    func seed(_ connect: GenericConnect<ContextStrategy.Mixed>) async throws {
        let bg = connect.newBackgroundContext()
        try await bg.perform {
            for (vin, seats) in [("c1", 4), ("c2", 2)] {
                let c = MhCar(context: bg)
                c.vin = vin
                c.maker = "old"
                c.seats = seats
            }
            let t = MhTruck(context: bg)
            t.vin = "t1"
            t.maker = "old"
            t.load = 10
            try bg.save()
        }
    }

    /// A merge of cars inserts, updates and deletes cars only: the truck sharing the table and
    /// the key is out of its scope.
    @Test func aMergeOfCarsLeavesTheOtherSubEntityAlone() async throws {
        let dir = try TemporaryDirectory()
        let connect = try connect(dir)
        try await seed(connect)
        #expect(connect.managedEntities["MhCar"] == ["vin"])
        let action = MergeCars([["vin": "c1", "maker": "new", "seats": 5], ["vin": "c3", "maker": "new", "seats": 7]])
        try await connect.execute(action).value
        let summary = try action.outcome.withLock { $0 }?.get()
        #expect(summary == MergeSummary(inserted: 1, updated: 1, deleted: 1, saved: true))
        #expect(try vehicles(connect.persistentStoreCoordinator) == ["car c1 new 5", "car c3 new 7", "truck t1 old 10.0"])
    }

    /// An incoming car whose key a stored truck holds (the constraint is the parent's): the
    /// object-trump upsert cannot turn the truck's row into a car; the merge fails with a
    /// `.conflict` and the store keeps the truck as it was (it took the car's values, the seats
    /// as the truck's load).
    @Test func anIncomingCarWithATrucksKeyFailsAndLeavesTheTruck() async throws {
        let dir = try TemporaryDirectory()
        let connect = try connect(dir)
        try await seed(connect)
        let action = MergeCars([
            ["vin": "c1", "maker": "old", "seats": 4], ["vin": "c2", "maker": "new", "seats": 2], ["vin": "t1", "maker": "car", "seats": 3]
        ])
        let proxy = try connect.execute(action)
        await proxy.finished
        #expect(proxy.completionStatus == .failed)
        #expect((proxy.error as? CoherenceError)?.code == .conflict)
        #expect(try vehicles(connect.persistentStoreCoordinator) == ["car c1 old 4", "car c2 old 2", "truck t1 old 10.0"])
    }

    /// The same with a plain context, under every policy that resolves uniqueness conflicts:
    /// an inserted car and a car renamed to the truck's key are refused, nothing written.
    @Test(arguments: [MergePolicy.mergeByPropertyObjectTrump, .overwrite, .mergeByPropertyStoreTrump, .rollback])
    func aCarNeverTakesOverATrucksRow(_ policy: MergePolicy) async throws {
        let dir = try TemporaryDirectory()
        let connect = try connect(dir)
        try await seed(connect)
        let context = connect.newBackgroundContext()
        context.mergePolicy = policy
        let errors = try await context.perform { () -> [CoherenceError.Code?] in
            var codes: [CoherenceError.Code?] = []
            let car = MhCar(context: context)
            car.vin = "t1"
            car.seats = 9
            do { try context.save() } catch { codes.append((error as? CoherenceError)?.code) }
            context.rollback()
            let c1 = try #require(try context.fetch(FetchRequest<MhCar>(predicate: #Predicate { $0.vin == "c1" })).first)
            c1.vin = "t1"
            do { try context.save() } catch { codes.append((error as? CoherenceError)?.code) }
            context.rollback()
            return codes
        }
        #expect(errors == [.conflict, .conflict])
        #expect(try vehicles(connect.persistentStoreCoordinator) == ["car c1 old 4", "car c2 old 2", "truck t1 old 10.0"])
    }

    /// On each store type: an inserted car with a truck's key, under object trump, is refused
    /// and the truck keeps its values.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aCarNeverTakesOverATrucksRowOnEachStore(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(
            type, in: dir, model: try ManagedObjectModel(types: [MhVehicle.self, MhCar.self, MhTruck.self]))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        context.mergePolicy = .mergeByPropertyObjectTrump
        let code = try context.performAndWait { () -> CoherenceError.Code? in
            let truck = MhTruck(context: context)
            truck.vin = "t1"
            truck.maker = "old"
            truck.load = 10
            try context.save()
            let car = MhCar(context: context)
            car.vin = "t1"
            car.maker = "car"
            car.seats = 3
            do { try context.save() } catch { return (error as? CoherenceError)?.code }
            return nil
        }
        #expect(code == .conflict)
        #expect(try vehicles(coordinator) == ["truck t1 old 10.0"])
    }
}
