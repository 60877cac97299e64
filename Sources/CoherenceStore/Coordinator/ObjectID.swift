import Foundation
import Synchronization

/// The identity of a managed object: its entity, its store and its primary key.
///
/// Object IDs are values, `Sendable` and `Hashable`: pass them between contexts and threads
/// (objects themselves stay on their context). An object inserted but not yet saved has a
/// *temporary* ID; it gets a permanent one when it is saved or through
/// `obtainPermanentIDs(for:)`.
///
/// ```swift
/// let uri = person.objectID.uriRepresentation()      // x-coredata://<store UUID>/Person/p42
/// let same = coordinator.managedObjectID(forURIRepresentation: uri)
/// ```
public struct ObjectID: Hashable, Sendable, CustomStringConvertible {
    /// The object's entity (an ID keeps it alive).
    public let entity: EntityDescription
    /// The identifier of the store holding the object; nil for temporary IDs.
    public var storeIdentifier: UUID? {
        guard hasStore else { return nil }
        let h = storeHigh, l = storeLow
        func byte(_ word: UInt64, _ n: UInt64) -> UInt8 { UInt8(truncatingIfNeeded: word >> (56 - 8 * n)) }
        return UUID(
            uuid: (
                byte(h, 0), byte(h, 1), byte(h, 2), byte(h, 3), byte(h, 4), byte(h, 5), byte(h, 6), byte(h, 7),
                byte(l, 0), byte(l, 1), byte(l, 2), byte(l, 3), byte(l, 4), byte(l, 5), byte(l, 6), byte(l, 7)
            ))
    }
    /// The store identifier's 16 bytes, kept as plain integers rather than as a `UUID`:
    /// Foundation's `UUID` comes from a library built for evolution, so a struct holding one has
    /// no layout known to this module, and every copy of an ID — and of every change-set row,
    /// snapshot or key holding one — went through run-time value witnesses instead of plain
    /// moves.
    /// (`@usableFromInline`, like the helpers below that contexts call per fetched row: other
    /// targets inline them.)
    @usableFromInline let storeHigh: UInt64
    @usableFromInline let storeLow: UInt64
    @usableFromInline let hasStore: Bool
    /// The primary key in the store, or the temporary number.
    @inlinable package var primaryKey: Int64 { _primaryKey }
    @usableFromInline var _primaryKey: Int64

    package init(entity: EntityDescription, storeIdentifier: UUID?, primaryKey: Int64) {
        self.entity = entity
        if let storeIdentifier {
            let words = ObjectID.words(of: storeIdentifier)
            self.storeHigh = words.0
            self.storeLow = words.1
            self.hasStore = true
        } else {
            self.storeHigh = 0
            self.storeLow = 0
            self.hasStore = false
        }
        self._primaryKey = primaryKey
    }

    /// An ID of another object in this ID's store (the store identifier copied as it is, not
    /// converted from a `UUID` again: a fetch makes one per row).
    @inlinable @inline(__always)
    package func inSameStore(entity: EntityDescription, primaryKey: Int64) -> ObjectID {
        ObjectID(entity: entity, storeHigh: storeHigh, storeLow: storeLow, hasStore: hasStore, primaryKey: primaryKey)
    }

    /// Makes the IDs of the rows of one store, one per row: the first from the store's
    /// identifier, the others copying its words (no `UUID` conversion per row).
    package struct RowIDs {
        let storeIdentifier: UUID
        @usableFromInline var first: ObjectID?

        package init(storeIdentifier: UUID) { self.storeIdentifier = storeIdentifier }

        /// The ID of the row of `entity` with key `primaryKey`.
        @inlinable @inline(__always)
        package mutating func next(entity: EntityDescription, primaryKey: Int64) -> ObjectID {
            if let first { return first.inSameStore(entity: entity, primaryKey: primaryKey) }
            return makeFirst(entity: entity, primaryKey: primaryKey)
        }

        @usableFromInline
        mutating func makeFirst(entity: EntityDescription, primaryKey: Int64) -> ObjectID {
            let id = ObjectID(entity: entity, storeIdentifier: storeIdentifier, primaryKey: primaryKey)
            first = id
            return id
        }
    }

    /// An ID made of its parts (no copy of another ID's entity reference to replace).
    @inlinable @inline(__always)
    init(entity: EntityDescription, storeHigh: UInt64, storeLow: UInt64, hasStore: Bool, primaryKey: Int64) {
        self.entity = entity
        self.storeHigh = storeHigh
        self.storeLow = storeLow
        self.hasStore = hasStore
        self._primaryKey = primaryKey
    }

    /// Whether two IDs name the same store (both temporary counts as the same), without
    /// making `UUID`s.
    @inlinable @inline(__always)
    package func sameStore(as other: ObjectID) -> Bool {
        hasStore == other.hasStore && storeHigh == other.storeHigh && storeLow == other.storeLow
    }

    /// Whether the ID names an object of the store `identifier` (compared as words, without
    /// making a `UUID`).
    @inline(__always)
    package func isStored(in identifier: UUID) -> Bool {
        guard hasStore else { return false }
        let words = ObjectID.words(of: identifier)
        return words.0 == storeHigh && words.1 == storeLow
    }

    /// A store identifier's 16 bytes as two words (big-endian), as IDs keep them.
    @inline(__always)
    private static func words(of identifier: UUID) -> (UInt64, UInt64) {
        let u = identifier.uuid
        func word(_ b: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)) -> UInt64 {
            UInt64(b.0) << 56 | UInt64(b.1) << 48 | UInt64(b.2) << 40 | UInt64(b.3) << 32
                | UInt64(b.4) << 24 | UInt64(b.5) << 16 | UInt64(b.6) << 8 | UInt64(b.7)
        }
        return (word((u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7)), word((u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15)))
    }

    /// The store identifier folded into one word (for hashing; 0 for temporary IDs).
    @inlinable @inline(__always)
    package var storeWord: UInt64 { hasStore ? storeHigh ^ storeLow ^ 1 : 0 }

    private static let temporaryCounter = Atomic<Int64>(0)
    /// Distinguishes this process's temporary IDs in URIs.
    package static let processToken = UUID().uuidString

    /// A new temporary ID for an inserted object.
    package static func temporary(for entity: EntityDescription) -> ObjectID {
        let n = temporaryCounter.add(1, ordering: .relaxed).newValue
        return ObjectID(entity: entity, storeIdentifier: nil, primaryKey: n)
    }

    /// Whether the ID is temporary (the object has not been saved yet).
    public var isTemporaryID: Bool { !hasStore }

    /// A URI for the object: `x-coredata://<store UUID>/<Entity>/p<key>`; temporary IDs use
    /// `x-coredata:///<Entity>/t<process token>-<n>`.
    public func uriRepresentation() -> URL {
        let text: String
        if let storeIdentifier {
            text = "x-coredata://\(storeIdentifier.uuidString)/\(Self.escape(entity.name))/p\(primaryKey)"
        } else {
            text = "x-coredata:///\(Self.escape(entity.name))/t\(Self.processToken)-\(primaryKey)"
        }
        // The text is built from a UUID, an escaped entity name and numbers: always a valid URL.
        return URL(string: text) ?? URL(fileURLWithPath: "/")
    }

    static func escape(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? s
    }

    /// Two IDs are equal when they name the same row: same entity hierarchy, store and key.
    @inlinable public static func == (lhs: ObjectID, rhs: ObjectID) -> Bool {
        lhs.primaryKey == rhs.primaryKey && lhs.sameStore(as: rhs)
            && (lhs.entity === rhs.entity || lhs.entity.rootEntity === rhs.entity.rootEntity)
    }

    /// Hashes the key only: IDs of the same key in two stores are rare, and equality still tells
    /// them apart. (Hashing the store UUID too doubled the cost of every identity-map lookup.)
    public func hash(into hasher: inout Hasher) {
        hasher.combine(primaryKey)
    }

    /// The hash `Set` and `Dictionary` use: the key mixed with the table's seed by a
    /// SplitMix64 finalizer, a few multiplications instead of a full `Hasher` round (identity-map
    /// lookups and insertions happen per fetched row). Equal IDs have equal keys, so equal hashes.
    public func _rawHashValue(seed: Int) -> Int {
        ObjectID.mix(primaryKey, seed: seed)
    }

    /// Whether this ID comes before `other` when equal sort keys leave two rows tied: by store
    /// (the order of the identifiers' `uuidString`s: the two words hold the UUID's bytes
    /// big-endian), then by primary key. No store comes first. Compares integers only: a sort
    /// calls it for every tied pair.
    @inline(__always)
    package func precedesInTieOrder(_ other: ObjectID) -> Bool {
        (storeHigh, storeLow, primaryKey) < (other.storeHigh, other.storeLow, other.primaryKey)
    }

    /// SplitMix64's finalizer over a key and a seed: every input bit affects every output bit.
    @inlinable @inline(__always)
    package static func mix(_ key: Int64, seed: Int) -> Int {
        var x = UInt64(bitPattern: key) &+ UInt64(UInt(bitPattern: seed)) &* 0x9E37_79B9_7F4A_7C15
        x = (x ^ (x >> 30)) &* 0xBF58_476D_1CE4_E5B9
        x = (x ^ (x >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int(truncatingIfNeeded: x ^ (x >> 31))
    }

    /// The entity and the primary key, for example `Person(42)` or `Person(temporary 3)`.
    public var description: String {
        isTemporaryID ? "\(entity.name)(temporary \(primaryKey))" : "\(entity.name)(\(primaryKey))"
    }
}

/// A primary key as a dictionary key hashed like ``ObjectID`` (cheaper than `Int64`'s `Hasher`).
package struct KeyOnly: Hashable {
    package let key: Int64
    @inline(__always) package init(_ key: Int64) { self.key = key }
    package func hash(into hasher: inout Hasher) { hasher.combine(key) }
    package func _rawHashValue(seed: Int) -> Int { ObjectID.mix(key, seed: seed) }
}
