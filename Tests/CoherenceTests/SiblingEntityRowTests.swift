import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Circle and Square share the Shape table (single-table inheritance). An object ID names a row
/// by key; one of the wrong sub-entity (a Circle ID for a Square's key) must find nothing, from
/// the store or from the coordinator's row cache, rather than the sibling's row read as the
/// wrong entity.
@Suite("Rows of a sibling entity")
struct SiblingEntityRowTests {
    private struct Fixture {
        let coordinator: PersistentStoreCoordinator
        let circle: EntityDescription, square: EntityDescription, shape: EntityDescription
        let squareID: ObjectID
        /// The square's key under the Circle entity.
        var wrongID: ObjectID { ObjectID(entity: circle, storeIdentifier: squareID.storeIdentifier, primaryKey: squareID.primaryKey) }
        /// The square's key under the abstract Shape entity.
        var shapeID: ObjectID { ObjectID(entity: shape, storeIdentifier: squareID.storeIdentifier, primaryKey: squareID.primaryKey) }
    }

    private static func fixture(_ type: StoreType, in dir: TemporaryDirectory) throws -> Fixture {
        let coordinator = try makeCoordinator(type, in: dir)
        let model = coordinator.managedObjectModel
        let circle = try #require(model.entity(for: Circle.self)), square = try #require(model.entity(for: Square.self))
        let shape = try #require(model.entitiesByName["Shape"])
        let ids = try insertObjects(
            coordinator,
            [
                rowInsert(circle, ["label": .text("c"), "radius": .real(2)]),
                rowInsert(square, ["label": .text("s"), "side": .real(3)])
            ])
        return Fixture(coordinator: coordinator, circle: circle, square: square, shape: shape, squareID: ids[1])
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aRowIsNotReadAsASiblingEntity(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let f = try Self.fixture(type, in: dir)
        // From the store (nothing cached yet).
        #expect(try f.coordinator.rows(for: [f.wrongID]).isEmpty)
        // The abstract parent finds the row, as its concrete entity.
        let byShape = try f.coordinator.rows(for: [f.shapeID])
        #expect(byShape.count == 1 && byShape.values.first?.entity === f.square)
        // From the row cache, now that the square's row is cached.
        #expect(try f.coordinator.rows(for: [f.squareID])[f.squareID]?.entity === f.square)
        #expect(!f.coordinator.rowCache.isEmpty)
        #expect(try f.coordinator.rows(for: [f.wrongID]).isEmpty)
        #expect(try f.coordinator.rows(for: [f.shapeID]).values.first?.entity === f.square)
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aContextFindsNoObjectForAnIDOfTheWrongSubEntity(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let f = try Self.fixture(type, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: f.coordinator)
        try context.performAndWait {
            do {
                let o = try context.existingObject(with: f.wrongID)
                Issue.record("found \(o) (\(o.entity.name)) for a Circle ID naming a Square")
            } catch let error as CoherenceError {
                #expect(error.code == .objectNotFound)
            }
            // A fault for the wrong ID finds no row when it fires.
            let fault = context.object(with: f.wrongID)
            #expect((fault as? Circle)?.radius == 0)
            #expect((fault as? Circle)?.label == "")
            context.reset()

            // The square registered in the context is not returned for the Circle ID either.
            let square = try context.existingObject(with: f.squareID)
            #expect((square as? Square)?.side == 3)
            do {
                let o = try context.existingObject(with: f.wrongID)
                Issue.record("found \(o) (\(o.entity.name)) for a Circle ID naming a Square")
            } catch let error as CoherenceError {
                #expect(error.code == .objectNotFound)
            }
            #expect(try context.existingObject(with: f.shapeID) === square)
        }
    }

    /// A conflict report reads the row as it is now: an ID of the wrong sub-entity reads none.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aConflictReportReadsNoSiblingRow(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let f = try Self.fixture(type, in: dir)
        let label = try #require(f.circle.propertiesByName["label"]).slot
        var values = f.circle.initialValues
        values[label] = .text("changed")
        var changes = StoreChangeSet()
        changes.updates = [
            RowUpdate(
                objectID: f.wrongID, values: values, changedSlots: [label], references: [],
                expectedVersion: 7, cachedValues: nil)
        ]
        do {
            _ = try f.coordinator.save(changes)
            Issue.record("the update of a row that is not a Circle was accepted")
        } catch {
            #expect(error.code == .conflict)
            let conflict = try #require(error.conflicts.first)
            #expect(conflict.persistedSnapshot == nil)
            #expect(conflict.newVersion == 0)
        }
        let square = try #require(try f.coordinator.rows(for: [f.squareID])[f.squareID])
        #expect(named(square)["label"] == .text("s"))
    }

    /// A fault `object(with:)` made for an ID of the wrong sub-entity (from a stale or edited
    /// URI) does not hide the row's own object: a fetch of the right entity returns it, and
    /// `object(with:)` and `existingObject(with:)` with its right ID find it (the fetch returned
    /// nothing and `existingObject` threw `.objectNotFound` for an object that exists).
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aStandInOfTheWrongSubEntityHidesNoObject(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let f = try Self.fixture(type, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: f.coordinator)
        let squareKeyAsCircle = f.wrongID
        try context.performAndWait {
            // Fired: it finds no row.
            let standIn = context.object(with: squareKeyAsCircle)
            #expect(throws: CoherenceError.self) { try standIn.fulfillFault() }
            let squares = try context.fetch(FetchRequest<Square>())
            #expect(squares.count == 1)
            #expect(squares.first?.side == 3)
            #expect(context.object(with: f.squareID) === squares.first)
            #expect(try context.count(for: FetchRequest<Shape>()) == 2)
            #expect(try context.fetch(FetchRequest<Shape>()).count == 2)
            context.reset()

            // Not fired yet.
            _ = context.object(with: squareKeyAsCircle)
            #expect((try context.existingObject(with: f.squareID) as? Square)?.side == 3)
            context.reset()

            // Fired, then asked for by the right ID.
            _ = (context.object(with: squareKeyAsCircle) as? Circle)?.radius
            let square = context.object(with: f.squareID)
            #expect((square as? Square)?.side == 3)
            #expect(try context.existingObject(with: f.squareID) === square)
        }
    }
}
