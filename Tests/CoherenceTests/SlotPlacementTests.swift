import Dispatch
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// A class whose entity is also built in code with its properties in another order.
final class Pair: ManagedObject {
    @Attribute var first: String = "a"
    @Attribute var second: Int = 7
}

/// A typed class whose subclass is not in any model.
class Labelled: ManagedObject {
    @Attribute var label: String = ""
}
final class SpecialLabelled: Labelled {
    @Attribute var extra: Int = 0
}

/// Typed accessors find their property's slot in the same wrapper of the object's slot template
/// (an object of its class whose wrappers hold their slots). These tests check that every way of
/// making an object gets it right.
@Suite struct SlotPlacementTests {
    /// The slot template `object` reads its slots from (fails the test when it has none).
    static func template(of object: ManagedObject) throws -> ManagedObject {
        let template = try #require(object._slotTemplate?.object as? ManagedObject)
        #expect(type(of: template) == type(of: object))
        return template
    }

    /// The slot each wrapper of `object` holds, by property name (superclasses included).
    static func wrapperSlots(_ object: ManagedObject) -> [String: Int] {
        var result: [String: Int] = [:]
        var mirror: Mirror? = Mirror(reflecting: object)
        while let m = mirror {
            for child in m.children {
                if let label = child.label, let w = child.value as? any SlottedPropertyWrapper {
                    result[String(label.dropFirst())] = w.slot
                }
            }
            mirror = m.superclassMirror
        }
        return result
    }

    @Test func everyWrapperOfEveryEntityHoldsItsPropertysSlot() throws {
        let model = try makeTestModel()
        for entity in model.entities where entity.managedObjectClass != ManagedObject.self {
            let object = entity.managedObjectClass.init(entity: entity)
            let slots = Self.wrapperSlots(try Self.template(of: object))
            #expect(slots.count == entity.properties.count, "\(entity.name)")
            for p in entity.properties { #expect(slots[p.name] == p.slot, "\(entity.name).\(p.name)") }
        }
    }

    @Test func inheritedAndOwnPropertiesReadAndWriteTheirOwnSlots() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let c = Circle(context: context)
            c.label = "round"
            c.radius = 2.5
            #expect(try c.value(forKey: "label") as? String == "round")
            #expect(try c.value(forKey: "radius") as? Double == 2.5)
            let s = Square(context: context)
            s.label = "square"
            s.side = 4
            try context.save()
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try reader.performAndWait {
            let shapes = try reader.fetch(FetchRequest<Shape>(sortBy: [SortDescriptor(\.label)]))
            #expect(shapes.map(\.label) == ["round", "square"])
            #expect((shapes[0] as? Circle)?.radius == 2.5)
            #expect((shapes[1] as? Square)?.side == 4)
        }
    }

    @Test func oneClassServesEntitiesWithDifferentSlotOrders() throws {
        let dir = try TemporaryDirectory()
        let reflected = try ManagedObjectModel(types: [Pair.self])
        let reordered = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Pair", managedObjectClass: Pair.self,
                properties: [
                    AttributeDescription(name: "second", type: .integer64, defaultValue: 7),
                    AttributeDescription(name: "first", type: .string, defaultValue: "a")
                ])
        ])
        let slotA = try #require(reflected.entitiesByName["Pair"]?.propertiesByName["first"]?.slot)
        let slotB = try #require(reordered.entitiesByName["Pair"]?.propertiesByName["first"]?.slot)
        #expect(slotA != slotB)
        for (i, model) in [reflected, reordered].enumerated() {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.addPersistentStore(type: .sqlite, at: dir.file("pair\(i).sqlite"))
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait {
                let p = Pair(context: context)
                #expect(p.first == "a" && p.second == 7)
                p.first = "x"
                p.second = 42
                #expect(try p.value(forKey: "first") as? String == "x")
                #expect(try p.value(forKey: "second") as? Int == 42)
                try context.save()
                context.reset()
                let fetched = try context.fetch(FetchRequest<Pair>())
                #expect(fetched.map(\.first) == ["x"])
                #expect(fetched.map(\.second) == [42])
            }
        }
    }

    @Test func objectsOfAClassOutsideTheModelGetTheirSlotsOnEveryThread() throws {
        let model = try ManagedObjectModel(types: [Labelled.self])
        let entity = try #require(model.entitiesByName["Labelled"])
        let labelSlot = try #require(entity.propertiesByName["label"]?.slot)
        // A subclass the model does not know: its template is made on first use, from many threads.
        let failures = LockedValue(0)
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            for n in 0..<50 {
                let object = SpecialLabelled(entity: entity)
                guard let template = object._slotTemplate?.object as? SpecialLabelled else {
                    failures.withLock { $0 += 1 }
                    continue
                }
                let slots = Self.wrapperSlots(template)
                // `extra` is not a property of the entity: its wrapper has no slot.
                if slots["label"] != labelSlot || slots["extra"] != -1 { failures.withLock { $0 += 1 } }
                object.label = "L\(i)-\(n)"
                if object.label != "L\(i)-\(n)" { failures.withLock { $0 += 1 } }
                if (try? object.value(forKey: "label")) as? String != "L\(i)-\(n)" { failures.withLock { $0 += 1 } }
            }
        }
        #expect(failures.withLock { $0 } == 0)
    }

    @Test func keyPathsResolveThroughTheSlotsTheirTemplatesHold() throws {
        let model = try makeTestModel()
        let person = try #require(model.entitiesByName["Person"])
        let circle = try #require(model.entitiesByName["Circle"])
        #expect(person.property(forKeyPath: \Person.age)?.name == "age")
        #expect(person.property(forKeyPath: \Person.town)?.name == "town")
        #expect(person.property(forKeyPath: \Person.clubs)?.name == "clubs")
        #expect(circle.property(forKeyPath: \Circle.label)?.name == "label")
        #expect(circle.property(forKeyPath: \Circle.radius)?.name == "radius")
        // A key path that reads no wrapper resolves to nothing.
        #expect(person.property(forKeyPath: \Person.objectID) == nil)
    }

    @Test func reflectingOnOneThreadWhileOthersMakeObjects() throws {
        let model = try ManagedObjectModel(types: [Pair.self])
        let entity = try #require(model.entitiesByName["Pair"])
        let failures = LockedValue(0)
        // Reflection records declarations only on its own thread: objects made meanwhile on
        // other threads keep no tokens, and reflected models get every declaration.
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            for n in 0..<40 {
                if i % 2 == 0 {
                    guard let m = try? ManagedObjectModel(types: [Pair.self]),
                        let a = m.entitiesByName["Pair"]?.attributesByName["first"],
                        let b = m.entitiesByName["Pair"]?.attributesByName["second"],
                        a.defaultValue == .text("a"), b.defaultValue == .integer(7)
                    else {
                        failures.withLock { $0 += 1 }
                        continue
                    }
                } else {
                    let p = Pair(entity: entity)
                    p.first = "\(i)-\(n)"
                    if p.first != "\(i)-\(n)" || p.second != 7 { failures.withLock { $0 += 1 } }
                    let template = p._slotTemplate?.object as? ManagedObject
                    if template.map({ Self.wrapperSlots($0).values.contains { $0 < 0 } }) != false { failures.withLock { $0 += 1 } }
                }
            }
        }
        #expect(failures.withLock { $0 } == 0)
    }

    @Test func aNullInANonOptionalAttributeReadsAsItsDefault() throws {
        let model = try ManagedObjectModel(types: [Pair.self])
        let entity = try #require(model.entitiesByName["Pair"])
        let p = Pair(entity: entity)
        let first = try #require(entity.propertiesByName["first"]?.slot)
        let second = try #require(entity.propertiesByName["second"]?.slot)
        p._state.setValue(.null, at: first)
        p._state.setValue(.null, at: second)
        #expect(p.first == "a")
        #expect(p.second == 7)
    }
}

/// Object IDs keep their store identifier as plain integers (see `ObjectID.storeIdentifier`).
@Suite struct ObjectIDStorageTests {
    @Test func storeIdentifiersRoundTripAndDecideEquality() throws {
        let model = try makeTestModel()
        let town = try #require(model.entitiesByName["Town"])
        let a = UUID(), b = UUID()
        let id = ObjectID(entity: town, storeIdentifier: a, primaryKey: 7)
        #expect(id.storeIdentifier == a)
        #expect(!id.isTemporaryID)
        #expect(id == ObjectID(entity: town, storeIdentifier: a, primaryKey: 7))
        #expect(id != ObjectID(entity: town, storeIdentifier: b, primaryKey: 7))
        #expect(id != ObjectID(entity: town, storeIdentifier: a, primaryKey: 8))
        let temporary = ObjectID.temporary(for: town)
        #expect(temporary.storeIdentifier == nil && temporary.isTemporaryID)
        #expect(temporary != ObjectID(entity: town, storeIdentifier: a, primaryKey: temporary.primaryKey))
        // An all-zero identifier is still a store, not a temporary ID.
        let zero = try #require(UUID(uuidString: "00000000-0000-0000-0000-000000000000"))
        let zeroID = ObjectID(entity: town, storeIdentifier: zero, primaryKey: 1)
        #expect(!zeroID.isTemporaryID && zeroID.storeIdentifier == zero)
        #expect(zeroID != ObjectID(entity: town, storeIdentifier: nil, primaryKey: 1))
        #expect(id.uriRepresentation().absoluteString.contains(a.uuidString))
    }
}
