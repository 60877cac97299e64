import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Models, containers, contexts and their objects are released with their last user: a server
/// that loads a model per tenant, or a test suite, does not keep every model it ever built.
@Suite("Lifetimes", .timeLimit(.minutes(10)))
struct LifetimeTests {
    /// Weak references to everything one round made.
    final class Watch {
        weak var model: ManagedObjectModel?
        var entities: [Weak<EntityDescription>] = []
        var properties: [Weak<PropertyDescription>] = []
        weak var container: GenericPersistentContainer<ContextStrategy.DirectIndependent>?
        weak var coordinator: PersistentStoreCoordinator?
        weak var context: ManagedObjectContext?
        var objects: [Weak<ManagedObject>] = []

        /// What is still alive (empty when everything went away).
        var survivors: [String] {
            var alive: [String] = []
            if model != nil { alive.append("model") }
            alive += entities.compactMap { $0.object.map { "entity \($0.name)" } }
            alive += properties.compactMap { $0.object.map { "property \($0.name)" } }
            if container != nil { alive.append("container") }
            if coordinator != nil { alive.append("coordinator") }
            if context != nil { alive.append("context") }
            alive += objects.compactMap { $0.object.map { "object \($0.entity.name)" } }
            return alive
        }
    }

    struct Weak<Object: AnyObject> {
        weak var object: Object?
        init(_ object: Object) { self.object = object }
    }

    /// The process's resident memory in bytes (from /proc/self/statm; 0 where there is none).
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// One round: load a model, make a container with one store (its view context takes no
    /// merges, which would wait for the main queue), save and fetch objects
    /// (a to-one relationship read loads through the fetch group), then let go of all of it.
    static func round(_ type: StoreType, in dir: TemporaryDirectory, number: Int) throws -> Watch {
        let watch = Watch()
        do {
            let model = try ManagedObjectModel(types: [Town.self, Person.self, Club.self])
            watch.model = model
            watch.entities = model.entities.map(Weak.init)
            watch.properties = model.entities.flatMap(\.properties).map(Weak.init)
            let container = GenericPersistentContainer<ContextStrategy.DirectIndependent>(name: "Round\(number)", managedObjectModel: model)
            watch.container = container
            watch.coordinator = container.persistentStoreCoordinator
            let store = try container.attachPersistentStore(at: dir.url, for: StoreConfiguration(type: type))
            let context = container.newBackgroundContext()
            watch.context = context
            try context.performAndWait {
                let town = Town(context: context)
                town.name = "Town \(number)"
                for i in 0..<3 {
                    let person = Person(context: context)
                    person.name = "Person \(i)"
                    person.town = town
                }
                try context.save()
                context.reset()
                let people = try context.fetch(FetchRequest<Person>())
                #expect(people.count == 3)
                #expect(people.allSatisfy { $0.town?.name == "Town \(number)" })
                watch.objects = people.map { Weak($0) } + people.compactMap { $0.town }.map { Weak($0) }
            }
            try container.detach(persistentStore: store)
            if let url = store.url { try FileManager.default.removeItem(at: url) }
        }
        return watch
    }

    /// Runs `count` rounds (of `type`; without one, every tenth round a SQLite container, the
    /// others in-memory ones: a new SQLite file costs its disk writes) and checks that each
    /// round's model, entities, properties, container, coordinator, context and objects are gone
    /// when it ends; `afterRound` runs after each.
    static func rounds(_ count: Int, _ type: StoreType? = nil, afterRound: (Int) -> Void = { _ in }) throws {
        let dir = try TemporaryDirectory()
        for number in 0..<count {
            let storeType = type ?? (number % 10 == 9 ? .sqlite : .inMemory)
            let survivors = try round(storeType, in: dir, number: number).survivors
            guard survivors.isEmpty else {
                Issue.record("Round \(number) (\(storeType)) left alive: \(survivors.joined(separator: ", "))")
                return
            }
            afterRound(number)
        }
    }

    /// Each round's model, container, context and objects are gone when it ends, while the
    /// other tests run alongside in this process (1,000 rounds run in a child process below).
    @Test(arguments: [StoreType.inMemory, StoreType.sqlite])
    func loadingAndReleasingModelsAndContainersFreesThem(_ type: StoreType) throws {
        try Self.rounds(50, type)
    }

    /// The environment variable that makes ``residentMemoryStaysFlatOverAThousandRounds()`` run
    /// its rounds (in the child process it starts) instead of starting a child.
    static let childVariable = "COHERENCE_LIFETIME_CHILD"

    /// 1,000 rounds (in-memory and SQLite containers) free everything they made and leave
    /// resident memory flat. Run in a child process that runs this test alone: the other tests,
    /// running in parallel in this process, move its resident memory by tens of megabytes.
    @Test func residentMemoryStaysFlatOverAThousandRounds() throws {
        if ProcessInfo.processInfo.environment[Self.childVariable] != nil {
            var baseline = 0
            // After the first rounds' caches.
            try Self.rounds(1_000) { number in if number == 49 { baseline = Self.residentBytes() } }
            // Alone in its process, 950 rounds grow resident memory by well under 1 MB; keeping
            // each round's model and entities (about 10 KB a round) grows it by 9 MB.
            guard baseline > 0 else { return }  // the rounds stopped early (recorded above)
            let growth = Self.residentBytes() - baseline
            #expect(growth < 4 << 20, "resident memory grew by \(growth >> 10) KB over 950 rounds")
            return
        }
        // The child is this test executable (Linux: /proc/self/exe), running this test only.
        try #require(FileManager.default.fileExists(atPath: "/proc/self/exe"))
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        child.arguments = ["--testing-library", "swift-testing", "--filter", "residentMemoryStaysFlatOverAThousandRounds"]
        var environment = ProcessInfo.processInfo.environment
        environment[Self.childVariable] = "1"
        child.environment = environment
        let output = Pipe()
        child.standardOutput = output
        child.standardError = output
        try child.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        #expect(child.terminationStatus == 0, "the child's run failed:\n\(text)")
        #expect(text.contains("residentMemoryStaysFlatOverAThousandRounds"), "the child ran no test:\n\(text)")
    }

    /// An object ID (and an object) can outlive the model that made its entity: the entity
    /// stays readable, and its links to the model and to other entities read as gone.
    @Test func anIDOutlivingItsModelKeepsItsEntity() throws {
        weak var weakModel: ManagedObjectModel?
        var id: ObjectID?
        var object: Person?
        do {
            let model = try ManagedObjectModel(types: [Town.self, Person.self, Club.self])
            weakModel = model
            let person = try #require(model.entitiesByName["Person"])
            #expect(person.relationshipsByName["town"]?.destinationEntity?.name == "Town")
            #expect(person.relationshipsByName["town"]?.inverseRelationship?.name == "people")
            #expect(person.managedObjectModel === model)
            id = ObjectID(entity: person, storeIdentifier: UUID(), primaryKey: 1)
            object = Person(entity: person)
        }
        #expect(weakModel == nil)
        let entity = try #require(id?.entity)
        #expect(entity.name == "Person")
        #expect(entity.managedObjectModel == nil)
        #expect(entity.attributesByName["name"]?.entity == nil)  // a link, like the others
        let town = try #require(entity.relationshipsByName["town"])
        #expect(town.destinationEntity == nil)
        #expect(town.inverseRelationship == nil)
        #expect(object?.entity === entity)
        #expect(try object?.value(forKey: "name") as? String == "")
        #expect(object?.name == "")
        #expect(object?.town == nil)  // its relationship's destination is gone with the model
        object?.name = "Ada"
        #expect(object?.name == "Ada")
    }

    /// A store outliving its container keeps its entities (its engine's caches know them by
    /// identity, so a freed entity's address must not come back as another model's entity
    /// while the store exists), and lets them go with it.
    @Test func aStoreKeepsItsEntitiesAsLongAsItExists() throws {
        let dir = try TemporaryDirectory()
        weak var weakPerson: EntityDescription?
        var store: PersistentStore?
        do {
            let model = try ManagedObjectModel(types: [Town.self, Person.self, Club.self])
            let container = GenericPersistentContainer<ContextStrategy.DirectIndependent>(name: "Kept", managedObjectModel: model)
            store = try container.attachPersistentStore(at: dir.url, for: StoreConfiguration(type: .inMemory))
            weakPerson = model.entitiesByName["Person"]
        }
        do {
            let person = try #require(weakPerson)  // the container and the model are gone
            #expect(store?.holds(person) == true)
        }
        store = nil
        #expect(weakPerson == nil)
    }

    /// A model that fails to load keeps nothing alive, and its properties still cannot join
    /// another model.
    @Test func aModelThatFailsToLoadKeepsNothingAlive() throws {
        weak var weakTown: EntityDescription?
        weak var weakPerson: EntityDescription?
        let people = RelationshipDescription(name: "people", destination: "Person", inverse: "town", isToMany: true)
        do {
            let town = EntityDescription(name: "Town", properties: [people])
            let person = EntityDescription(
                name: "Person",
                properties: [
                    RelationshipDescription(name: "town", destination: "Town", inverse: "people"),
                    AttributeDescription(name: "age", type: .integer64, isOptional: false, storedDefault: .integer(0))
                ], uniquenessConstraints: [["nope"]])
            weakTown = town
            weakPerson = person
            #expect(throws: ModelError.self) { try ManagedObjectModel(entities: [town, person]) }
        }
        #expect(weakTown == nil)
        #expect(weakPerson == nil)
        let again = EntityDescription(name: "Town", properties: [people])
        #expect(throws: ModelError.self) { try ManagedObjectModel(entities: [again]) }
    }
}
