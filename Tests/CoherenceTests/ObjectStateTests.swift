import Foundation
import Testing
@testable import Coherence

/// The operations of an object's state (`ObjectState`) keep its parts in step: the sparse
/// committed snapshot, the flags, the relationship state and the version.
@Suite struct ObjectStateTests {
    /// A loaded state: values 1, "a", 3.0 at version 4.
    static func loaded() -> ObjectState {
        var state = ObjectState(values: [.null, .null, .null])
        state.install([.integer(1), .text("a"), .real(3)], toOne: nil, version: 4, asFault: false, keepRelations: false)
        return state
    }

    static let allStored = [true, true, true]

    @Test func aNewObjectHasNoSnapshot() {
        var state = ObjectState(values: [.integer(0)])
        #expect(!state.hasSnapshot && state.committedValues() == nil && state.committedValue(at: 0) == nil)
        #expect(state.flags.isEmpty && state.version == 0)
        state.setValue(.integer(5), at: 0)
        #expect(state.values == [.integer(5)] && !state.hasSnapshot)
    }

    @Test func installingMakesTheRowTheValuesAndTheSnapshot() {
        var state = Self.loaded()
        #expect(state.values == [.integer(1), .text("a"), .real(3)] && state.version == 4)
        #expect(state.originals?.isEmpty == true && state.committedValues() == state.values)
        let changed = state.hasAttributeChanges(isStoredAttribute: Self.allStored)
        #expect(!changed)
        state.install([.integer(2), .text("b"), .real(3)], toOne: nil, version: 5, asFault: true, keepRelations: false)
        #expect(state.flags.contains(.fault) && state.flags.contains(.prefilled))
        state.realizePrefilled()
        #expect(!state.flags.contains(.fault) && !state.flags.contains(.prefilled))
    }

    @Test func aChangeKeepsEachSlotsCommittedValueOnce() {
        var state = Self.loaded()
        state.setValue(.text("b"), at: 1)
        state.setValue(.text("c"), at: 1)
        state.setValue(.integer(7), at: 0)
        #expect(state.values == [.integer(7), .text("c"), .real(3)])
        #expect(state.originals?.map(\.slot) == [1, 0])
        #expect(state.committedValues() == [.integer(1), .text("a"), .real(3)])
        #expect(state.committedValue(at: 1) == .text("a") && state.committedValue(at: 2) == .real(3))
        var slots: [Int] = []
        state.appendChangedSlots(isStoredAttribute: Self.allStored, to: &slots)
        #expect(slots == [0, 1])
        // Back to its committed value: listed, but no longer a change.
        state.setValue(.text("a"), at: 1)
        state.setValue(.integer(1), at: 0)
        let changedBack = state.hasAttributeChanges(isStoredAttribute: Self.allStored)
        #expect(!changedBack)
        // Slots that are not stored attributes are no attribute change.
        state.setValue(.real(9), at: 2)
        let attributesChanged = state.hasAttributeChanges(isStoredAttribute: [true, true, false])
        let slotsChanged = state.hasAttributeChanges(isStoredAttribute: Self.allStored)
        #expect(!attributesChanged && slotsChanged)
    }

    @Test func committingMakesTheValuesTheSnapshot() {
        var state = Self.loaded()
        state.setValue(.text("b"), at: 1)
        state.setRelation(.toOne(nil), at: 2)
        state.commit(foreignKeys: [], objectID: nil)
        #expect(state.originals?.isEmpty == true && state.committedValues() == state.values)
        #expect(state.values[1] == .text("b"))
        #expect(state.relations == nil)  // a to-one override is committed
    }

    @Test func rollingBackRestoresTheSnapshotAndDropsRelationships() {
        var state = Self.loaded()
        state.setValue(.text("b"), at: 1)
        state.setValue(.real(0), at: 2)
        state.setRelation(.toOne(nil), at: 0)
        state.rollBack()
        #expect(state.values == [.integer(1), .text("a"), .real(3)])
        #expect(state.originals?.isEmpty == true && state.relations == nil)
    }

    @Test func rebasingKeepsTheValuesAndMakesEveryDifferenceAChange() {
        var state = Self.loaded()
        state.setValue(.integer(9), at: 0)
        state.rebase(onto: [.integer(1), .text("z"), .real(3)], toOne: nil, version: 7)
        #expect(state.values == [.integer(9), .text("a"), .real(3)] && state.version == 7)
        #expect(state.committedValues() == [.integer(1), .text("z"), .real(3)])
        var slots: [Int] = []
        state.appendChangedSlots(isStoredAttribute: Self.allStored, to: &slots)
        #expect(slots == [0, 1])
        // Rolled back after that, it takes the stored row's values.
        state.rollBack()
        #expect(state.values == [.integer(1), .text("z"), .real(3)])
    }

    @Test func aLoadFailureLeavesAFaultWithoutDataUntilARowIsInstalled() {
        var state = Self.loaded()
        state.failLoad(defaults: [.integer(0), .null, .null])
        #expect(state.flags.contains(.fault) && state.flags.contains(.loadFailed))
        #expect(!state.hasSnapshot && state.version == 0 && state.values == [.integer(0), .null, .null])
        state.setValue(.integer(5), at: 0)  // an edit while unloaded: no snapshot to keep it in
        #expect(!state.hasSnapshot)
        state.install([.integer(1), .text("a"), .real(3)], toOne: nil, version: 4, asFault: false, keepRelations: true)
        #expect(!state.flags.contains(.loadFailed) && !state.flags.contains(.fault) && state.hasSnapshot)
        state.failLoad(defaults: [.integer(0), .null, .null])
        state.endLoadFailure(defaults: [.integer(0), .null, .null])
        #expect(!state.flags.contains(.loadFailed) && state.flags.contains(.fault))
    }

    @Test func relationshipStateIsNilOnceItsLastEntryGoes() {
        var state = Self.loaded()
        state.setRelation(.toOne(nil), at: 1)
        state.setRelation(.toOne(nil), at: 2)
        #expect(state.relations?.count == 2)
        state.setRelation(nil, at: 1)
        #expect(state.relation(at: 1) == nil && state.relations?.count == 1)
        state.setRelation(nil, at: 2)
        #expect(state.relations == nil)
        state.setRelation(.toOne(nil), at: 2)
        state.turnIntoFault()
        #expect(state.relations == nil && state.flags.contains(.fault))
    }

    @Test func lifecycleFlagsMoveTogether() {
        var state = ObjectState(values: [.null])
        state.beginInserted()
        #expect(state.flags == [.inserted] && state.version == 0)
        state.markDeleted()
        #expect(state.flags == [.deleted])
        state.unmarkDeleted()
        state.beginInserted(values: [.integer(3)])
        state.endInserted(version: 1)
        #expect(state.flags.isEmpty && state.version == 1 && state.values == [.integer(3)])
        let listed = state.markPendingUpdate(), listedTwice = state.markPendingUpdate()
        #expect(listed && !listedTwice)
        state.clearPendingUpdate()
        let listedAgain = state.markPendingUpdate()
        #expect(listedAgain)
        state.markForgotten()
        #expect(state.flags == [.inaccessible])
        state.clearFlags()
        #expect(state.flags.isEmpty)
    }

    @Test func committedDestinationsAreDerivedFromForeignKeysUnlessSet() throws {
        let model = try makeTestModel()
        let person = try #require(model.entitiesByName["Person"])
        let town = try #require(person.relationshipsByName["town"])
        let store = UUID()
        let me = ObjectID(entity: person, storeIdentifier: store, primaryKey: 1)
        var values = person.initialValues
        values[town.slot] = .integer(8)
        var state = ObjectState(values: person.initialValues)
        state.install(values, toOne: nil, version: 1, asFault: false, keepRelations: false)
        let derivedID = state.committedToOneID(town, objectID: me)
        let derived = try #require(derivedID)
        #expect(derived.primaryKey == 8 && derived.storeIdentifier == store && derived.entity === town.destinationEntity)
        #expect(state.currentToOneID(town, objectID: me) == derived)
        // Set explicitly (a parent context's snapshot), they are what the snapshot says.
        let other = ObjectID(entity: try #require(town.destinationEntity), storeIdentifier: store, primaryKey: 9)
        var toOne = [ObjectID?](repeating: nil, count: person.foreignKeyRelationships.count)
        toOne[town.fkOrdinal] = other
        state.install(values, toOne: toOne, version: 1, asFault: false, keepRelations: false)
        #expect(state.committedToOneID(town, objectID: me) == other)
        // After a save, the current destination is committed and its key is in the values.
        state.setRelation(.toOne(nil), at: town.slot)
        #expect(state.currentToOneID(town, objectID: me) == nil)
        state.commit(foreignKeys: person.foreignKeyRelationships, objectID: me)
        #expect(state.committedToOneID(town, objectID: me) == nil && state.values[town.slot] == .null)
    }

    #if DEBUG
    @Test func debugBuildsStopAnOperationThatWouldBreakTheRules() async {
        await #expect(processExitsWith: .failure) {
            var state = ObjectState(values: [.null])
            state.install([.integer(1)], toOne: nil, version: 1, asFault: false, keepRelations: false)
            // Only an object without loaded data drops its edits this way.
            state.discardUnloadedEdits(defaults: [.null])
        }
    }
    #endif
}
