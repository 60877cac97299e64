import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Models whose configurations split related entities, as Xcode models with a "Global" and a
/// "Persistent" configuration do: Account and Tag are Global, Document and Page Persistent, and
/// Document relates to all three. Such a model loads; only a save that relates two objects of
/// different stores fails, naming the relationship and both stores, and writes nothing.
@Suite("Relationships across stores")
struct CrossStoreRelationshipTests {
    enum ModelSource: String, CaseIterable, CustomTestStringConvertible {
        case code, xcode
        var testDescription: String { rawValue }
    }

    static let configurations = ["Global": ["Account", "Tag"], "Persistent": ["Document", "Page"]]

    static func codeModel() throws -> ManagedObjectModel {
        let account = EntityDescription(
            name: "Account",
            properties: [
                AttributeDescription(name: "name", type: .string),
                RelationshipDescription(name: "documents", destination: "Document", inverse: "account", isToMany: true)
            ])
        let tag = EntityDescription(
            name: "Tag",
            properties: [
                AttributeDescription(name: "name", type: .string),
                RelationshipDescription(name: "documents", destination: "Document", inverse: "tags", isToMany: true)
            ])
        let document = EntityDescription(
            name: "Document",
            properties: [
                AttributeDescription(name: "name", type: .string),
                RelationshipDescription(name: "account", destination: "Account", inverse: "documents"),
                RelationshipDescription(name: "tags", destination: "Tag", inverse: "documents", isToMany: true),
                RelationshipDescription(name: "pages", destination: "Page", inverse: "document", isToMany: true, deleteRule: .cascade)
            ])
        let page = EntityDescription(
            name: "Page",
            properties: [
                AttributeDescription(name: "name", type: .string),
                RelationshipDescription(name: "document", destination: "Document", inverse: "pages")
            ])
        return try ManagedObjectModel(entities: [account, tag, document, page], configurations: configurations)
    }

    /// The same model as an Xcode `contents` file.
    static let xcodeContents = """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" minimumToolsVersion="Automatic" sourceLanguage="Swift" userDefinedModelVersionIdentifier="">
            <entity name="Account" representedClassName="Account" syncable="YES" codeGenerationType="class">
                <attribute name="name" optional="YES" attributeType="String"/>
                <relationship name="documents" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Document" inverseName="account" inverseEntity="Document"/>
            </entity>
            <entity name="Document" representedClassName="Document" syncable="YES" codeGenerationType="class">
                <attribute name="name" optional="YES" attributeType="String"/>
                <relationship name="account" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Account" inverseName="documents" inverseEntity="Account"/>
                <relationship name="pages" optional="YES" toMany="YES" deletionRule="Cascade" destinationEntity="Page" inverseName="document" inverseEntity="Page"/>
                <relationship name="tags" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Tag" inverseName="documents" inverseEntity="Tag"/>
            </entity>
            <entity name="Page" representedClassName="Page" syncable="YES" codeGenerationType="class">
                <attribute name="name" optional="YES" attributeType="String"/>
                <relationship name="document" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Document" inverseName="pages" inverseEntity="Document"/>
            </entity>
            <entity name="Tag" representedClassName="Tag" syncable="YES" codeGenerationType="class">
                <attribute name="name" optional="YES" attributeType="String"/>
                <relationship name="documents" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Document" inverseName="tags" inverseEntity="Document"/>
            </entity>
            <configuration name="Global">
                <memberEntity name="Account"/>
                <memberEntity name="Tag"/>
            </configuration>
            <configuration name="Persistent">
                <memberEntity name="Document"/>
                <memberEntity name="Page"/>
            </configuration>
        </model>
        """

    static func model(_ source: ModelSource, in dir: TemporaryDirectory) throws -> ManagedObjectModel {
        switch source {
        case .code:
            return try codeModel()
        case .xcode:
            let folder = dir.file("Split.xcdatamodel")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data(xcodeContents.utf8).write(to: folder.appendingPathComponent("contents"))
            return try ManagedObjectModel(contentsOf: folder)
        }
    }

    /// A coordinator with the Global store (`globalType`) and the Persistent store (SQLite).
    static func coordinator(
        _ model: ManagedObjectModel, global globalType: StoreType,
        in dir: TemporaryDirectory
    ) throws -> (PersistentStoreCoordinator, global: PersistentStore, persistent: PersistentStore) {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let global = try coordinator.addPersistentStore(
            type: globalType, configuration: "Global",
            at: globalType == .sqlite ? dir.file("global.sqlite") : nil)
        let persistent = try coordinator.addPersistentStore(type: .sqlite, configuration: "Persistent", at: dir.file("persistent.sqlite"))
        return (coordinator, global, persistent)
    }

    /// Every stored object of `entities` with its relationships, read by a new context.
    static func stored(_ coordinator: PersistentStoreCoordinator, _ entities: [String] = ["Account", "Tag", "Document", "Page"]) throws
        -> [String]
    {
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        return try reader.performAndWait {
            var lines: [String] = []
            for entity in entities {
                for o in try reader.fetch(FetchRequest<ManagedObject>(entityName: entity)) {
                    let relations = o.entity.relationships.sorted { $0.name < $1.name }.map { r in
                        "\(r.name)=\(o.related(r.name).map(\.nameValue).sorted())"
                    }
                    lines.append("\(entity) \(o.nameValue) " + relations.joined(separator: " "))
                }
            }
            return lines.sorted()
        }
    }

    static func location(_ store: PersistentStore) -> String {
        store.type.factory == nil ? store.url?.path ?? store.engine.locationDescription : store.engine.locationDescription
    }

    @Test(arguments: ModelSource.allCases, [StoreType.sqlite, .inMemory])
    func aSplitModelLoadsAndOnlyCrossStoreSavesFail(_ source: ModelSource, _ globalType: StoreType) throws {
        let dir = try TemporaryDirectory()
        let model = try Self.model(source, in: dir)
        #expect(model.entities(forConfiguration: "Global")?.map(\.name) == ["Account", "Tag"])
        #expect(model.entities(forConfiguration: "Persistent")?.map(\.name) == ["Document", "Page"])
        let (coordinator, global, persistent) = try Self.coordinator(model, global: globalType, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)

        /// Saves, expecting a cross-store error for `entity.property` from `from` to `to`, with
        /// every store as it was.
        func expectRefused(
            _ entity: String, _ property: String, from: PersistentStore, to: PersistentStore,
            sourceLocation: SourceLocation = #_sourceLocation
        ) throws {
            let before = try Self.stored(coordinator)
            do {
                try context.save()
                Issue.record("a save relating objects of two stores succeeded", sourceLocation: sourceLocation)
            } catch {
                #expect(error.code == .crossStoreRelationship, sourceLocation: sourceLocation)
                #expect(error.entityName == entity, sourceLocation: sourceLocation)
                #expect(error.propertyName == property, sourceLocation: sourceLocation)
                #expect(error.store == Self.location(from), sourceLocation: sourceLocation)
                #expect(error.destinationStore == Self.location(to), sourceLocation: sourceLocation)
                #expect(
                    error.description.contains(Self.location(from)) && error.description.contains(Self.location(to)),
                    sourceLocation: sourceLocation)
            }
            #expect(context.hasChanges, sourceLocation: sourceLocation)
            #expect(try Self.stored(coordinator) == before, sourceLocation: sourceLocation)
        }

        try context.performAndWait {
            func make(_ entity: String, _ name: String) throws -> ManagedObject {
                let o = try context.insertNewObject(forEntityName: entity)
                try o.setValue(name, forKey: "name")
                return o
            }
            // Related objects of one store, and unrelated objects of both: saved.
            let alice = try make("Account", "alice")
            let red = try make("Tag", "red")
            let d1 = try make("Document", "d1")
            let p1 = try make("Page", "p1")
            p1.relate("document", to: [d1])
            try context.save()
            #expect(alice.objectID.storeIdentifier == global.identifier && red.objectID.storeIdentifier == global.identifier)
            #expect(d1.objectID.storeIdentifier == persistent.identifier && p1.objectID.storeIdentifier == persistent.identifier)

            // A new document of a saved account (a foreign key to the other store).
            let d2 = try make("Document", "d2")
            d2.relate("account", to: [alice])
            try expectRefused("Document", "account", from: persistent, to: global)
            d2.relate("account", to: [])
            try context.save()

            // A saved document moved to an account (an update).
            d1.relate("account", to: [alice])
            try expectRefused("Document", "account", from: persistent, to: global)
            context.rollback()

            // A many-to-many link (a join-table row).
            d1.relate("tags", to: [red])
            try expectRefused("Document", "tags", from: persistent, to: global)
            context.rollback()

            // Both objects new in the same save.
            let bob = try make("Account", "bob")
            let d3 = try make("Document", "d3")
            d3.relate("account", to: [bob])
            try expectRefused("Document", "account", from: persistent, to: global)
            context.rollback()
        }

        let expected = [
            "Account alice documents=[]", "Document d1 account=[] pages=[\"p1\"] tags=[]",
            "Document d2 account=[] pages=[] tags=[]", "Page p1 document=[\"d1\"]", "Tag red documents=[]"
        ]
        #expect(try Self.stored(coordinator) == expected)
        // The files, read by a new coordinator.
        let (reopened, _, _) = try Self.coordinator(model, global: globalType, in: dir)
        let onDisk = try Self.stored(reopened, globalType == .sqlite ? ["Account", "Tag", "Document", "Page"] : ["Document", "Page"])
        #expect(onDisk == expected.filter { globalType == .sqlite || $0.hasPrefix("Document") || $0.hasPrefix("Page") })
    }

    /// A reference to an object of a store that is no longer attached, with one store attached:
    /// the store itself refuses it with the same code.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aReferenceToADetachedStoreIsRefused(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        let old = try coordinator.addPersistentStore(type: .inMemory)
        let town = try #require(coordinator.managedObjectModel.entity(for: Town.self))
        let person = try #require(coordinator.managedObjectModel.entity(for: Person.self))
        let townID = try #require(try insertObjects(coordinator, [rowInsert(town, ["name": .text("Oslo")])]).first)
        try coordinator.remove(old)
        let store = try coordinator.addPersistentStore(type: type, at: try dir.storeURL(type, "s"))
        do {
            try insertObjects(coordinator, [rowInsert(person, ["name": .text("p")], references: ["town": townID])])
            Issue.record("a reference to another store was written")
        } catch let error as CoherenceError {
            #expect(error.code == .crossStoreRelationship)
            #expect(error.entityName == "Person" && error.propertyName == "town")
            #expect(error.store == Self.location(store))
            #expect(error.destinationStore?.contains(old.identifier.uuidString) == true)
        }
        #expect(try coordinator.count(for: FetchRequest<Person>()) == 0)
    }
}
