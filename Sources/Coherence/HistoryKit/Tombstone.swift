import Foundation

/// What history kept of a deleted object, as text (PersistentHistoryTrackingKit 2's
/// `Tombstone`): the attributes of its uniqueness constraints and those marked
/// ``AttributeDescription/preservesValueInHistoryOnDeletion``.
///
/// Values become strings: strings as they are, URLs their absolute string, UUIDs their
/// `uuidString`, dates ISO 8601, numbers and Booleans their value, data its size.
public struct Tombstone: Sendable, Hashable {
    /// The kept attributes by name.
    public let attributes: [String: String]
    /// When the object was deleted (the transaction's timestamp).
    public let deletedDate: Date?

    /// Creates a tombstone (the date defaults to now).
    public init(attributes: [String: String], deletedDate: Date? = Date()) {
        self.attributes = attributes
        self.deletedDate = deletedDate
    }

    /// The tombstone of a history change (nil unless it is a delete).
    init?(_ change: PersistentHistoryChange, timestamp: Date) {
        guard change.changeType == .delete else { return nil }
        var attributes: [String: String] = [:]
        let byName = change.changedObjectID.entity.attributesByName
        for (key, value) in change.tombstone ?? [:] {
            if let text = Self.text(value, type: byName[key]?.type) { attributes[key] = text }
        }
        self.init(attributes: attributes, deletedDate: timestamp)
    }

    /// A stored value as text, read as its attribute's type.
    static func text(_ value: StoredValue, type: AttributeType?) -> String? {
        if value.isNull { return nil }
        switch type {
        case .date?:
            // A date that is not finite has no ISO 8601 form (Foundation writes a made-up one,
            // -4712-01-01 for NaN and −∞): it is written as its number, as numbers are.
            return Date(storedValue: value).map { date in
                let interval = date.timeIntervalSinceReferenceDate
                return interval.isFinite ? date.formatted(.iso8601) : String(interval)
            }
        case .uuid?:
            return UUID(storedValue: value)?.uuidString
        case .uri?:
            return URL(storedValue: value)?.absoluteString
        case .boolean?:
            return Bool(storedValue: value).map { String($0) }
        case .decimal?:
            return Decimal(storedValue: value).map { "\($0)" }
        default:
            switch value {
            case .null: return nil
            case .integer(let v): return String(v)
            case .real(let v): return String(v)
            case .text(let v): return v
            case .blob(let d): return "\(d.count) bytes"
            }
        }
    }
}
