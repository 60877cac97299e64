import BenchmarkSupport
import Coherence
import Foundation

// W11: RCDataKit's two-phase importer (`Persistable`, `importPersistableObjects`) against
// `ActionContext.merge` on the same data: n stored people, n incoming of which n/2 are stored
// (a quarter of all with a changed score, a quarter unchanged) and n/2 new. Both run as an
// action on the same connect and include their save; the importer prefetches the stored rows
// with one fetch (`.in(\.id, ids)`) and writes through `Updatable`.

extension BPerson: Updatable {}

/// One incoming person for the importer.
struct IncomingBPerson: Persistable, Sendable {
    let id: Int
    let name: String
    let email: String
    let age: Int
    let score: Double
    let createdAt: Date

    static func generateImporterData(objects: [IncomingBPerson], context: ManagedObjectContext) throws -> [Int: BPerson] {
        var request = FetchRequest<BPerson>().where(.in(\.id, objects.map(\.id)))
        request.returnsObjectsAsFaults = false
        let stored = try context.fetch(request)
        return Dictionary(stored.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
    }

    func importIntoContext(_ context: ManagedObjectContext, importerData: inout [Int: BPerson]) -> PersistenceResult {
        guard let person = importerData[id] else {
            let person = BPerson(context: context)
            person.id = id
            person.name = name
            person.email = email
            person.age = age
            person.score = score
            person.createdAt = createdAt
            importerData[id] = person
            return .insert(person.objectID)
        }
        var changed = person.update(\.name, value: name)
        changed = person.update(\.email, value: email) || changed
        changed = person.update(\.age, value: age) || changed
        changed = person.update(\.score, value: score) || changed
        changed = person.update(\.createdAt, value: createdAt) || changed
        return changed ? .update(person.objectID) : .noAction
    }
}

extension Workloads {
    final class ImportAction: EntityAction {
        typealias ManagedObjectType = BPerson
        let incoming: [IncomingBPerson]
        init(_ incoming: [IncomingBPerson]) { self.incoming = incoming }
        func execute(context: ActionContext) throws {
            let results: [PersistenceResult] = try context.importPersistableObjects(incoming)
            if results.count != incoming.count { print("W11 import: \(results.count) results for \(incoming.count) items") }
            try context.save()
        }
    }

    static func w11(_ o: Options) throws -> WorkloadResult {
        let n = o.n(100_000)
        let stored = n / 2
        var items: [IncomingBPerson] = []
        items.reserveCapacity(n)
        for i in 0..<n {
            let score = i < stored / 2 ? -1.0 : Data_.score(i)
            items.append(
                IncomingBPerson(
                    id: i, name: Data_.name(i, stored), email: Data_.email(i), age: Data_.age(i), score: score, createdAt: Data_.created(i))
            )
        }
        items.shuffle()
        let payload = items
        let dictionaries: [[String: any Sendable]] = payload.map {
            ["id": $0.id, "name": $0.name, "email": $0.email, "age": $0.age, "score": $0.score, "createdAt": $0.createdAt]
        }
        func run(_ label: String, _ action: @escaping () -> any EntityAction) throws -> Double {
            try withTemporaryDirectory { dir in
                let connect = GenericConnect<ContextStrategy.Mixed>(name: "W11", managedObjectModel: benchmarkModel)
                connect.storeLocation = dir
                try connect.start()
                try fillCoherence(connect.persistentStoreCoordinator, n: stored)
                let proxy = try connect.execute(action())
                proxy.waitUntilFinished()
                if proxy.completionStatus != .successful { print("W11 \(label) failed: \(String(describing: proxy.error))") }
                let check = backgroundContext(connect.persistentStoreCoordinator)
                let count = try check.performAndWait { try check.count(for: FetchRequest<BPerson>()) }
                if count != n { print("W11 \(label): \(count) people stored, expected \(n)") }
                try connect.stop()
                return proxy.statistics.executionTime
            }
        }
        var result = try interleave(
            "W11", "import \(n) (Persistable) vs merge", reps: o.repetitions,
            [
                ("coherence", { try run("importer") { ImportAction(payload) } }),
                ("baseline", { try run("merge") { MergeAction(dictionaries) } })
            ])
        result.note =
            "\(stored) stored; \(stored / 2) updated, \(stored / 2) unchanged, \(n - stored) inserted; baseline: ActionContext.merge"
        return result
    }
}
