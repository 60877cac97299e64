import Foundation

/// An object's snapshot seen as a row for evaluating a predicate that reads only the row's own
/// attributes (one that reads related objects finds none here).
struct SnapshotRow: QueryRow {
    let snapshot: ObjectSnapshot

    var queryEntity: EntityDescription { snapshot.id.entity }
    var queryObjectID: ObjectID { snapshot.id }
    func queryValue(at slot: Int) -> StoredValue { slot < snapshot.values.count ? snapshot.values[slot] : .null }
    func queryToOne(_ relationship: RelationshipDescription) -> (any QueryRow)? { nil }
    func queryToMany(_ relationship: RelationshipDescription) -> [any QueryRow] { [] }
}
