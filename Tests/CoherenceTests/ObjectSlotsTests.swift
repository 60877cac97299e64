import Dispatch
import Foundation
import Testing
@testable import Coherence

/// Something a test runs while one property's initial value is computed (see `Nest`), once.
final class InitialValueHook: @unchecked Sendable {
    // @unchecked Sendable: made, bound and run on one thread.
    @TaskLocal static var current: InitialValueHook?
    let property: String
    private let body: () -> Void
    private var fired = false

    init(at property: String, _ body: @escaping () -> Void) {
        self.property = property
        self.body = body
    }

    /// Runs the bound hook if it is for `property` and has not run yet; returns `value`.
    static func fire<T>(_ property: String, _ value: T) -> T {
        if let hook = current, hook.property == property, !hook.fired {
            hook.fired = true
            hook.body()
        }
        return value
    }

    /// Runs `body` with a hook for `property` bound.
    static func with<T>(at property: String, _ hook: @escaping () -> Void, _ body: () throws -> T) rethrows -> T {
        try $current.withValue(InitialValueHook(at: property, hook), operation: body)
    }
}

/// A class whose property initial values run a test's hook: every wrapper kind.
final class Nest: ManagedObject {
    @Attribute var first: Int = InitialValueHook.fire("first", 1)
    @Attribute var second: Int = InitialValueHook.fire("second", 2)
    @Transformed var tags: [String] = InitialValueHook.fire("tags", ["t"])
    @Attribute var third: String = InitialValueHook.fire("third", "3")
    @Relationship(inverse: "partnerOf") var partner: Nest?
    @Relationship(inverse: "partner") var partnerOf: Set<Nest>
}

/// A class whose designated initializer can fail after its properties are initialized.
final class Fallible: ManagedObject {
    /// An entity for failing constructions (never loaded: nothing is made with it).
    static let scratch = EntityDescription(name: "Scratch", properties: [])
    @Attribute var x: Int = 0
    @Attribute var y: Int = 0
    init?(entity: EntityDescription, failing: Bool) {
        if failing { return nil }
        super.init(entity: entity)
    }
    required init(entity: EntityDescription) { super.init(entity: entity) }
}

/// A class that replaces one of its wrappers after its object is made.
final class Remade: ManagedObject {
    @Attribute var p: Int = 0
    @Attribute var q: Int = 0
    required init(entity: EntityDescription) {
        super.init(entity: entity)
        _q = Attribute(wrappedValue: 9)
    }
}

/// A class whose second property's initial value makes wrappers of a construction that fails.
final class Crowded: ManagedObject {
    @Attribute var a: Int = 0
    @Attribute var b: Int = {
        _ = Fallible(entity: Fallible.scratch, failing: true)
        return 0
    }()
    @Attribute var c: Int = 0
}

/// A class whose initial values make other wrappers on every other construction only: its
/// wrappers' places differ between two constructions.
final class Fickle: ManagedObject {
    static let constructions = LockedValue(0)
    @Attribute var a: Int = 0
    @Attribute var b: Int = {
        if Fickle.constructions.withLock({ n in
            n += 1
            return n % 2 == 1
        }) {
            _ = Fallible(entity: Fallible.scratch, failing: true)
        }
        return 0
    }()
    @Attribute var c: Int = 0
}

/// Three levels, with properties on each and every wrapper kind.
class Level1: ManagedObject {
    @Attribute var one: Int = 1
    @Attribute var shared: String = "s"
}
class Level2: Level1 {
    @Transformed var two: [Int] = [2]
    @Relationship(inverse: "links") var owner: Level3?
}
final class Level3: Level2 {
    @Attribute var three: Double = 3
    @Relationship(inverse: "owner") var links: Set<Level2>
}

/// A typed class whose subclass is in no model; its first property's initial value runs a hook.
class Gathering: ManagedObject {
    @Attribute var title: String = InitialValueHook.fire("title", "")
}
final class Party: Gathering {
    @Attribute var guests: Int = 0
}

/// Typed accessors read their slots from a template of the object's class and entity, made and
/// checked once; nothing that happens while an object is made can give it another's slots.
@Suite struct ObjectSlotsTests {
    static func nestModel() throws -> ManagedObjectModel {
        try ManagedObjectModel(types: [Nest.self, Fallible.self, Remade.self, Crowded.self, Level3.self])
    }

    /// Writes distinct values through `n`'s typed accessors and reads them by name, and the other
    /// way round: true when both reach the same slots.
    static func typedAndNamedAgree(_ n: Nest, _ seed: Int = 0) -> Bool {
        n.first = seed + 11
        n.second = seed + 22
        n.third = "\(seed + 33)"
        n.tags = ["\(seed)"]
        guard (try? n.value(forKey: "first")) as? Int == seed + 11, (try? n.value(forKey: "second")) as? Int == seed + 22,
            (try? n.value(forKey: "third")) as? String == "\(seed + 33)",
            (try? n.decodedValue(forKey: "tags", as: [String].self)) == ["\(seed)"]
        else { return false }
        guard (try? n.setValue(seed + 1, forKey: "first")) != nil, (try? n.setValue(seed + 2, forKey: "second")) != nil,
            (try? n.setValue("\(seed + 3)", forKey: "third")) != nil, (try? n.setEncodedValue(["x"], forKey: "tags")) != nil
        else { return false }
        return n.first == seed + 1 && n.second == seed + 2 && n.third == "\(seed + 3)" && n.tags == ["x"] && n.partner == nil
            && n.partnerOf.isEmpty
    }

    /// The integer values of `names` in `object`, read by name (nil: not an integer).
    static func named(_ object: ManagedObject, _ names: [String]) -> [Int?] {
        names.map { (try? object.value(forKey: $0)) as? Int }
    }

    /// Whether `object` reads through a template of its own class whose wrappers hold their
    /// properties' slots for the object's entity.
    static func readsThroughItsTemplate(_ object: ManagedObject) -> Bool {
        guard let template = object._slotTemplate?.object as? ManagedObject, type(of: template) == type(of: object) else {
            return false
        }
        let slots = SlotPlacementTests.wrapperSlots(template)
        return !slots.isEmpty && slots.allSatisfy { name, slot in slot == object.entity.propertiesByName[name]?.slot ?? -1 }
    }

    @Test func everyWayOfMakingAnObjectGivesItATemplateOfItsClass() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir, model: try Self.nestModel())
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let entity = try #require(coordinator.managedObjectModel.entitiesByName["Nest"])
        try context.performAndWait {
            let direct = Nest(entity: entity)
            let inserted = Nest(context: context)
            let named = try #require(try context.insertNewObject(forEntityName: "Nest") as? Nest)
            for (i, n) in [direct, inserted, named].enumerated() {
                #expect(Self.readsThroughItsTemplate(n))
                // The object's own wrappers are not read.
                #expect(SlotPlacementTests.wrapperSlots(n).values.allSatisfy { $0 == -1 })
                #expect(Self.typedAndNamedAgree(n, i * 100))
            }
            inserted.partner = named
            #expect(named.partnerOf == [inserted])
            try context.save()
            context.reset()
            let fetched = try context.fetch(FetchRequest<Nest>())
            #expect(fetched.count == 2)
            for n in fetched { #expect(Self.readsThroughItsTemplate(n)) }
            #expect(fetched.filter { $0.partner != nil }.map { $0.partner?.partnerOf.count } == [1])
        }
    }

    @Test func subclassesInitializeTheirOwnWrappersBeforeTheirSuperclasses() throws {
        let model = try Self.nestModel()
        let entity = try #require(model.entitiesByName["Level3"])
        let plan = try #require(entity.objectClassData as? SlotPlan)
        let order = ["three", "links", "two", "owner", "one", "shared"]
        #expect(plan.slotsByPlace == order.map { Int16(entity.propertiesByName[$0]?.slot ?? -2) })
        #expect(plan.template != nil)
    }

    @Test func everyLevelOfAHierarchyReadsAndWritesItsOwnSlots() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir, model: try Self.nestModel())
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let top = Level3(context: context)
            let middle = Level2(context: context)
            let bottom = Level1(context: context)
            for object in [top, middle, bottom] as [ManagedObject] { #expect(Self.readsThroughItsTemplate(object)) }
            top.one = 10
            top.shared = "top"
            top.two = [30]
            top.three = 2.5
            middle.one = 20
            middle.two = [40]
            middle.owner = top
            bottom.shared = "bottom"
            #expect(try top.value(forKey: "one") as? Int == 10 && top.value(forKey: "shared") as? String == "top")
            #expect(try top.value(forKey: "three") as? Double == 2.5 && top.decodedValue(forKey: "two", as: [Int].self) == [30])
            #expect(try middle.value(forKey: "one") as? Int == 20 && middle.decodedValue(forKey: "two", as: [Int].self) == [40])
            #expect(top.links == [middle])
            try context.save()
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try reader.performAndWait {
            let all = try reader.fetch(FetchRequest<Level1>())
            #expect(all.count == 3)
            for object in all { #expect(Self.readsThroughItsTemplate(object)) }
            let top = try #require(all.compactMap { $0 as? Level3 }.first)
            let middle = try #require(all.first { type(of: $0) == Level2.self } as? Level2)
            let bottom = try #require(all.first { type(of: $0) == Level1.self })
            #expect(top.one == 10 && top.shared == "top" && top.two == [30] && top.three == 2.5)
            #expect(middle.one == 20 && middle.two == [40] && middle.owner === top && top.links == [middle])
            #expect(bottom.one == 1 && bottom.shared == "bottom")
        }
    }

    @Test func objectsMadeInAPropertysInitialValueKeepTheirOwnSlots() throws {
        let model = try Self.nestModel()
        let context = ManagedObjectContext(concurrencyType: .mainQueue, coordinator: PersistentStoreCoordinator(managedObjectModel: model))
        let nest = try #require(model.entitiesByName["Nest"])
        let fallible = try #require(model.entitiesByName["Fallible"])
        try context.performAndWait {
            // Made directly or by Coherence, of the same class or another, before the outer
            // object's first wrapper or after some of them.
            let makers: [(String, () -> ManagedObject)] = [
                ("first", { Nest(entity: nest) }), ("second", { Nest(entity: nest) }), ("tags", { Fallible(entity: fallible) }),
                ("second", { Nest(context: context) }), ("third", { Fallible(context: context) })
            ]
            for (n, (property, make)) in makers.enumerated() {
                var inner: ManagedObject?
                let outer = InitialValueHook.with(at: property, { inner = make() }) { Nest(entity: nest) }
                let innerObject = try #require(inner)
                #expect(Self.readsThroughItsTemplate(outer) && Self.readsThroughItsTemplate(innerObject), "\(n)")
                #expect(Self.typedAndNamedAgree(outer, n), "\(n)")
                if let innerNest = innerObject as? Nest {
                    #expect(Self.typedAndNamedAgree(innerNest, n + 100), "\(n)")
                } else if let innerFallible = innerObject as? Fallible {
                    innerFallible.x = 5
                    innerFallible.y = 6
                    #expect(Self.named(innerFallible, ["x", "y"]) == [5, 6])
                }
            }
        }
    }

    @Test func aConstructionThatFailsAfterInitializingItsPropertiesChangesNothing() throws {
        let model = try Self.nestModel()
        let nest = try #require(model.entitiesByName["Nest"])
        let fallible = try #require(model.entitiesByName["Fallible"])
        #expect(Fallible(entity: fallible, failing: true) == nil)
        let after = Nest(entity: nest)
        #expect(Self.readsThroughItsTemplate(after) && Self.typedAndNamedAgree(after))
        var failed: Fallible?? = .none
        let during = InitialValueHook.with(at: "second", { failed = .some(Fallible(entity: fallible, failing: true)) }) {
            Nest(entity: nest)
        }
        #expect(failed == .some(nil))
        #expect(Self.readsThroughItsTemplate(during) && Self.typedAndNamedAgree(during))
        let made = try #require(Fallible(entity: fallible, failing: false))
        made.y = 3
        #expect(Self.named(made, ["x", "y"]) == [0, 3])
    }

    @Test func wrapperStorageReplacedAfterTheObjectIsMadeDoesNotMoveItsProperty() throws {
        let model = try Self.nestModel()
        let entity = try #require(model.entitiesByName["Remade"])
        let object = Remade(entity: entity)
        #expect(Self.readsThroughItsTemplate(object))
        object.q = 4
        object.p = 3
        #expect(Self.named(object, ["p", "q"]) == [3, 4])
    }

    @Test func wrappersOfAnotherObjectMadeWhileATemplateIsMadeGetNoSlot() throws {
        let model = try Self.nestModel()
        let entity = try #require(model.entitiesByName["Crowded"])
        let plan = try #require(entity.objectClassData as? SlotPlan)
        // Places: a, the failed construction's x and y, b, c.
        #expect(plan.slotsByPlace.count == 5 && plan.slotsByPlace[1] == -1 && plan.slotsByPlace[2] == -1)
        let object = Crowded(entity: entity)
        #expect(Self.readsThroughItsTemplate(object))
        object.a = 1
        object.b = 2
        object.c = 3
        #expect(Self.named(object, ["a", "b", "c"]) == [1, 2, 3])
    }

    @Test func aClassWhoseWrappersChangePlacesHasNoTemplateAndReadsExactly() throws {
        // (`Fickle` is in this test's model only: its constructions alternate.)
        let model = try ManagedObjectModel(types: [Fickle.self])
        let entity = try #require(model.entitiesByName["Fickle"])
        let plan = try #require(entity.objectClassData as? SlotPlan)
        #expect(plan.template == nil)
        for n in 0..<3 {
            let object = Fickle(entity: entity)
            #expect(object._slotTemplate == nil)
            object.a = n + 1
            object.b = n + 2
            object.c = n + 3
            #expect(Self.named(object, ["a", "b", "c"]) == [n + 1, n + 2, n + 3])
        }
    }

    @Test func oneClassInTwoModelsWithDifferentPropertiesGetsEachEntitysSlots() throws {
        let reflected = try Self.nestModel()
        // The same class for an entity with its attributes in another order, one more attribute
        // and no relationships (the class's relationship wrappers get no slot).
        let other = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Nest", managedObjectClass: Nest.self,
                properties: [
                    AttributeDescription(name: "extra", type: .integer64, defaultValue: 0),
                    AttributeDescription(name: "third", type: .string, defaultValue: "3"),
                    AttributeDescription(name: "tags", type: .transformable, isOptional: true),
                    AttributeDescription(name: "second", type: .integer64, defaultValue: 2),
                    AttributeDescription(name: "first", type: .integer64, defaultValue: 1)
                ])
        ])
        let a = try #require(reflected.entitiesByName["Nest"])
        let b = try #require(other.entitiesByName["Nest"])
        #expect(a.propertiesByName["first"]?.slot != b.propertiesByName["first"]?.slot)
        for n in 0..<4 {
            let x = Nest(entity: a)
            let y = Nest(entity: b)
            #expect(Self.readsThroughItsTemplate(x) && Self.readsThroughItsTemplate(y))
            x.first = n
            y.first = n + 10
            y.second = n + 20
            y.tags = ["y"]
            #expect(try x.value(forKey: "first") as? Int == n)
            #expect(try y.value(forKey: "first") as? Int == n + 10 && y.value(forKey: "second") as? Int == n + 20)
            #expect(try y.value(forKey: "extra") as? Int == 0 && y.decodedValue(forKey: "tags", as: [String].self) == ["y"])
        }
    }

    @Test func objectsOfAClassOutsideTheModelMadeOnSeveralThreadsAtOnceShareOneTemplate() throws {
        let model = try ManagedObjectModel(types: [Gathering.self])
        let entity = try #require(model.entitiesByName["Gathering"])
        let arrived = [DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)]
        let templates = LockedValue<[ObjectIdentifier]>([])
        let failures = LockedValue(0)
        // Each thread stops in the middle of making its first `Party` until the other is there
        // too; then both look for the class's template, made on first use.
        DispatchQueue.concurrentPerform(iterations: 2) { i in
            let rendezvous = {
                arrived[i].signal()
                arrived[1 - i].wait()
            }
            let party = InitialValueHook.with(at: "title", rendezvous) { Party(entity: entity) }
            party.title = "party \(i)"
            if (try? party.value(forKey: "title")) as? String != "party \(i)" || !Self.readsThroughItsTemplate(party) {
                failures.withLock { $0 += 1 }
            }
            if let template = party._slotTemplate?.object { templates.withLock { $0.append(ObjectIdentifier(template)) } }
        }
        #expect(failures.withLock { $0 } == 0)
        let seen = templates.withLock { $0 }
        #expect(seen.count == 2 && Set(seen).count == 1)
    }
}
