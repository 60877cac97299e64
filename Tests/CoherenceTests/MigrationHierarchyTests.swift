import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Inferred migrations that change an entity hierarchy: a sub-entity removed or moved out of it
/// leaves no to-one pointing at its rows, an attribute moved up to the parent gives the other
/// sub-entities' rows its default, attributes and relationships moved down and up again keep
/// their values and bring back no others, and a sub-entity's uniqueness constraint ignores its
/// siblings.
@Suite("Migrations: sub-entities removed or moved, properties moved up or down")
struct MigrationHierarchyTests {
    /// Owners with a pet and friends (Animals); Cat and Dog under Animal. `dog: false` removes
    /// Dog, `dogUnder: false` makes it a root entity; `sound` moves from Dog up to Animal.
    static func zoo(dog: Bool = true, dogUnder: Bool = true, sound: AttributeDescription? = nil) throws -> ManagedObjectModel {
        var entities = [
            EntityDescription(
                name: "Owner",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    RelationshipDescription(name: "pet", destination: "Animal"),
                    RelationshipDescription(name: "friends", destination: "Animal", isToMany: true)
                ]),
            EntityDescription(name: "Animal", properties: [AttributeDescription(name: "name", type: .string)] + [sound].compactMap { $0 }),
            EntityDescription(
                name: "Cat", superentity: "Animal",
                properties: [AttributeDescription(name: "lives", type: .integer16, defaultValue: Int16(9))])
        ]
        if dog {
            entities.append(
                EntityDescription(
                    name: "Dog", superentity: dogUnder ? "Animal" : nil,
                    properties: (dogUnder ? [] : [AttributeDescription(name: "name", type: .string)])
                        + (sound == nil ? [AttributeDescription(name: "sound", type: .string)] : [])))
        }
        return try ManagedObjectModel(entities: entities)
    }

    /// Rex (a Dog) is Ann's pet and friend, Tom (a Cat) is Bo's pet and Ann's friend.
    static func fillZoo(_ url: URL) throws {
        try withMigrationStore(try zoo(), at: url) { context in
            let rex = try insertObject(context, "Dog", ["name": "Rex", "sound": "woof"])
            let tom = try insertObject(context, "Cat", ["name": "Tom"])
            let ann = try insertObject(context, "Owner", ["name": "Ann"])
            ann.relate("pet", to: [rex])
            ann.relate("friends", to: [rex, tom])
            try insertObject(context, "Owner", ["name": "Bo"]).relate("pet", to: [tom])
            try context.save()
        }
    }

    /// The name of each owner's pet ("nil" for none), recording an issue for a pet that cannot be read.
    static func petNames(_ owners: [ManagedObject]) -> [String] {
        owners.map { owner in
            do {
                guard let pet = try owner.value(forKey: "pet") as? ManagedObject else { return "nil" }
                return try pet.value(forKey: "name") as? String ?? "?"
            } catch {
                Issue.record("The pet of \(owner.nameValue) cannot be read: \(error)")
                return "error"
            }
        }
    }

    @Test(arguments: storedTypes)
    func aRemovedSubentityLeavesNoToOnePointingAtItsRows(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try Self.fillZoo(url)
        try withMigrationStore(try Self.zoo(dog: false), at: url) { context in
            let owners = try fetchByName(context, "Owner")
            #expect(owners.map(\.nameValue) == ["Ann", "Bo"])
            #expect(Self.petNames(owners) == ["nil", "Tom"])
            #expect(owners.map { $0.related("friends").map(\.nameValue) } == [["Tom"], []])
        }
    }

    @Test(arguments: storedTypes)
    func aSubentityMovedOutOfItsHierarchyLeavesNoToOnePointingAtItsRows(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try Self.fillZoo(url)
        try withMigrationStore(try Self.zoo(dogUnder: false), at: url) { context in
            let owners = try fetchByName(context, "Owner")
            #expect(Self.petNames(owners) == ["nil", "Tom"])
            #expect(owners.map { $0.related("friends").map(\.nameValue) } == [["Tom"], []])
            #expect(try fetchByName(context, "Dog").map(\.nameValue) == ["Rex"])
            #expect(try fetchByName(context, "Animal").map(\.nameValue) == ["Tom"])
        }
    }

    /// `sound` moves from Dog up to Animal: Dog's rows keep theirs, Cat's (which had none) take
    /// the default, whether the attribute is required or optional.
    @Test(arguments: storedTypes, [false, true])
    func anAttributeMovedUpToTheParentTakesItsDefaultInTheOtherSubentities(_ type: StoreType, _ isOptional: Bool) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try Self.fillZoo(url)
        let sound = AttributeDescription(name: "sound", type: .string, isOptional: isOptional, defaultValue: "purr")
        try withMigrationStore(try Self.zoo(sound: sound), at: url) { context in
            let animals = try fetchByName(context, "Animal")
            #expect(animals.map(\.nameValue) == ["Rex", "Tom"])
            #expect(animals.map { (try? $0.value(forKey: "sound")) as? String } == ["woof", "purr"])
        }
    }

    /// Without a default, a required attribute moved up is refused for the rows that have no
    /// value, naming it, and the store is unchanged.
    @Test(arguments: storedTypes)
    func aRequiredAttributeMovedUpWithoutADefaultIsATypedError(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try Self.fillZoo(url)
        let before = try migrationStoreContents(url)
        let sound = AttributeDescription(name: "sound", type: .string)
        let error = #expect(throws: CoherenceError.self) { try withMigrationStore(try Self.zoo(sound: sound), at: url) { _ in } }
        #expect(error?.code == .migrationMissingValues)
        #expect(error?.entityName == "Animal" && error?.propertyName == "sound")
        #expect(try migrationStoreContents(url) == before)
    }

    @Test(arguments: storedTypes)
    func aSubentitysNewUniquenessConstraintIgnoresItsSiblingsAndNils(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try Self.fillZoo(url)
        try withMigrationStore(try Self.zoo(), at: url) { context in
            // A Cat named as the Dog, and two owners without a pet.
            try insertObject(context, "Cat", ["name": "Rex"])
            try insertObject(context, "Owner", ["name": "Cy"])
            try insertObject(context, "Owner", ["name": "Di"])
            try context.save()
        }
        let v2 = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Owner",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    RelationshipDescription(name: "pet", destination: "Animal"),
                    RelationshipDescription(name: "friends", destination: "Animal", isToMany: true)
                ], uniquenessConstraints: [["pet"]]),
            EntityDescription(name: "Animal", properties: [AttributeDescription(name: "name", type: .string)]),
            EntityDescription(
                name: "Cat", superentity: "Animal",
                properties: [AttributeDescription(name: "lives", type: .integer16, defaultValue: Int16(9))],
                uniquenessConstraints: [["name"]]),
            EntityDescription(
                name: "Dog", superentity: "Animal", properties: [AttributeDescription(name: "sound", type: .string)],
                uniquenessConstraints: [["name"]])
        ])
        try withMigrationStore(v2, at: url) { context in
            #expect(try fetchByName(context, "Animal").count == 3)
            try insertObject(context, "Cat", ["name": "Rex"])
            let error = #expect(throws: CoherenceError.self) { try context.save() }
            #expect(error?.code == .conflict)
        }
    }

    /// `sound` moves from Animal down to Dog, then up again: the Cat's old value, hidden while
    /// Cats had no sound, does not come back (the Cat has none, as in Core Data).
    @Test(arguments: storedTypes)
    func anAttributeMovedDownThenUpAgainDoesNotBringBackOldValues(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        let sound = { AttributeDescription(name: "sound", type: .string, isOptional: true) }
        try withMigrationStore(try Self.zoo(sound: sound()), at: url) { context in
            try insertObject(context, "Cat", ["name": "Tom", "sound": "meow"])
            try insertObject(context, "Dog", ["name": "Rex", "sound": "woof"])
            try context.save()
        }
        let dogs = try withMigrationStore(try Self.zoo(), at: url) { context in
            try fetchByName(context, "Dog").map { (try? $0.value(forKey: "sound")) as? String }
        }
        #expect(dogs == ["woof"])
        let sounds = try withMigrationStore(try Self.zoo(sound: sound()), at: url) { context in
            try fetchByName(context, "Animal").map { (try? $0.value(forKey: "sound")) as? String }
        }
        #expect(sounds == ["woof", nil])
    }

    /// A to-one `friend` moves from Animal down to Dog, then up again: the Dog keeps its friend
    /// both times, and the Cat's old friend, hidden while Cats had none, does not come back.
    @Test(arguments: storedTypes)
    func aRelationshipMovedDownThenUpAgainKeepsItsObjectsAndNoOthers(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        func model(friendOnAnimal: Bool) throws -> ManagedObjectModel {
            let friend = [RelationshipDescription(name: "friend", destination: "Owner")]
            return try ManagedObjectModel(entities: [
                EntityDescription(name: "Owner", properties: [AttributeDescription(name: "name", type: .string)]),
                EntityDescription(
                    name: "Animal", properties: [AttributeDescription(name: "name", type: .string)] + (friendOnAnimal ? friend : [])),
                EntityDescription(name: "Cat", superentity: "Animal", properties: []),
                EntityDescription(name: "Dog", superentity: "Animal", properties: friendOnAnimal ? [] : friend)
            ])
        }
        try withMigrationStore(try model(friendOnAnimal: true), at: url) { context in
            let ann = try insertObject(context, "Owner", ["name": "Ann"])
            try insertObject(context, "Cat", ["name": "Tom"]).relate("friend", to: [ann])
            try insertObject(context, "Dog", ["name": "Rex"]).relate("friend", to: [ann])
            try context.save()
        }
        let dogs = try withMigrationStore(try model(friendOnAnimal: false), at: url) { context in
            try fetchByName(context, "Dog").map { $0.related("friend").map(\.nameValue) }
        }
        #expect(dogs == [["Ann"]])
        // The Dog's friend was lost when the relationship moved up (it was looked for on Animal only).
        let friends = try withMigrationStore(try model(friendOnAnimal: true), at: url) { context in
            try fetchByName(context, "Animal").map { $0.related("friend").map(\.nameValue) }
        }
        #expect(friends == [["Ann"], []])
    }

    /// A to-many without inverse (a join table) moved up from Dog to Animal keeps its pairs.
    @Test(arguments: storedTypes)
    func aToManyMovedUpToTheParentKeepsItsObjects(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        func model(friendsOnAnimal: Bool) throws -> ManagedObjectModel {
            let friends = [RelationshipDescription(name: "friends", destination: "Owner", isToMany: true)]
            return try ManagedObjectModel(entities: [
                EntityDescription(name: "Owner", properties: [AttributeDescription(name: "name", type: .string)]),
                EntityDescription(
                    name: "Animal", properties: [AttributeDescription(name: "name", type: .string)] + (friendsOnAnimal ? friends : [])),
                EntityDescription(name: "Cat", superentity: "Animal", properties: []),
                EntityDescription(name: "Dog", superentity: "Animal", properties: friendsOnAnimal ? [] : friends)
            ])
        }
        try withMigrationStore(try model(friendsOnAnimal: false), at: url) { context in
            let ann = try insertObject(context, "Owner", ["name": "Ann"])
            let bo = try insertObject(context, "Owner", ["name": "Bo"])
            try insertObject(context, "Cat", ["name": "Tom"])
            try insertObject(context, "Dog", ["name": "Rex"]).relate("friends", to: [ann, bo])
            try context.save()
        }
        let friends = try withMigrationStore(try model(friendsOnAnimal: true), at: url) { context in
            try fetchByName(context, "Animal").map { $0.related("friends").map(\.nameValue).sorted() }
        }
        #expect(friends == [["Ann", "Bo"], []])
    }
}
