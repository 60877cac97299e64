import Coherence
import Foundation

// The benchmarks' Coherence model: Person(id, name, email, age, score, createdAt, town) with an
// index on age, and Town for the relationship workload; the same data on every store.

/// Keeps results alive so reads are not optimized away.
nonisolated(unsafe) public var sink = 0

public final class BPerson: ManagedObject {
    @Attribute public var id: Int = 0
    @Attribute public var name: String = ""
    @Attribute public var email: String = ""
    @Attribute public var age: Int = 0
    @Attribute public var score: Double = 0
    @Attribute public var createdAt: Date = Date(timeIntervalSinceReferenceDate: 0)
    @Relationship(inverse: "people") public var town: BTown?
    public override class var entityName: String { "Person" }
    public override class var indexes: [[String]] { [["age"]] }
    public override class var entityUserInfo: [String: any Sendable] { ["uniquenessAttributes": "id"] }
}

public final class BTown: ManagedObject {
    @Attribute public var name: String = ""
    @Relationship(inverse: "town") public var people: Set<BPerson>
    public override class var entityName: String { "Town" }
}

/// Reads every property of a person the way an app would.
@inlinable @inline(__always) public func touch(_ p: BPerson) -> Int {
    p.id &+ p.name.utf8.count &+ p.email.utf8.count &+ p.age &+ Int(p.score) &+ Int(p.createdAt.timeIntervalSinceReferenceDate)
}

/// Deterministic test data.
public enum Data_ {
    @inlinable public static func name(_ i: Int, _ n: Int) -> String { "name-\((i &* 7919) % max(n, 1))" }
    @inlinable public static func email(_ i: Int) -> String { "p\(i)@example.com" }
    @inlinable public static func age(_ i: Int) -> Int { i % 80 }
    @inlinable public static func score(_ i: Int) -> Double { Double(i) * 0.5 }
    @inlinable public static func created(_ i: Int) -> Date { Date(timeIntervalSinceReferenceDate: 700_000_000 + Double(i)) }
}

public let benchmarkModel: ManagedObjectModel = {
    do { return try ManagedObjectModel(types: [BPerson.self, BTown.self]) } catch {
        print("model error: \(error)")
        exit(1)
    }
}()

/// A private context on a coordinator.
public func backgroundContext(_ c: PersistentStoreCoordinator) -> ManagedObjectContext {
    ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
}

/// Inserts person `i` (of `n`) with the benchmark's values.
@discardableResult @inlinable @inline(__always)
public func insertPerson(_ i: Int, of n: Int, into context: ManagedObjectContext) -> BPerson {
    let p = BPerson(context: context)
    p.id = i
    p.name = Data_.name(i, n)
    p.email = Data_.email(i)
    p.age = Data_.age(i)
    p.score = Data_.score(i)
    p.createdAt = Data_.created(i)
    return p
}

/// Fills a Coherence store with `n` people (and `towns` towns when > 0).
public func fillCoherence(_ c: PersistentStoreCoordinator, n: Int, towns: Int = 0, offset: Int = 0) throws {
    let context = backgroundContext(c)
    try context.performAndWait {
        let townObjects: [BTown] = (0..<towns).map { t in
            let town = BTown(context: context)
            town.name = "Town \(t)"
            return town
        }
        for i in offset..<(offset + n) {
            let p = insertPerson(i, of: n, into: context)
            if !townObjects.isEmpty { p.town = townObjects[i % townObjects.count] }
        }
        try context.save()
    }
}
