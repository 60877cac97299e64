/// Marks an object immortal in the Swift runtime (`_swift_stdlib_immortalize`, the standard
/// library's own entry point, exported by every Swift 5.9+ runtime): it is never deallocated,
/// and retaining or releasing it reads its reference count and returns instead of updating it
/// atomically.
///
/// Only for objects that live as long as the process anyway: entity descriptions (immortal by
/// design, see `EntityDescription.init`) and their shared arrays. Every fetched or inserted
/// object starts from its entity's initial values and refers to its entity, so their reference
/// counts were updated for every object made, by every thread, on one shared cache line.
/// A copy-on-write buffer made immortal is never uniquely referenced, so writes through any
/// array sharing it copy it first, as they should.
@_silgen_name("_swift_stdlib_immortalize")
private func _swift_stdlib_immortalize(_ object: UnsafeMutableRawPointer)

enum Immortal {
    /// Makes `object` immortal.
    static func make(_ object: AnyObject) {
        make(objectAt: Unmanaged.passUnretained(object).toOpaque())
    }

    /// Makes the object at `pointer` immortal.
    static func make(objectAt pointer: UnsafeMutableRawPointer) {
        _swift_stdlib_immortalize(pointer)
        markForBothFastPaths(pointer)
    }

    /// The word `_swift_stdlib_immortalize` leaves on 64-bit platforms for an object with no
    /// other reference: the slow-reference-count bit, a strong count of zero, and every
    /// unowned-count bit.
    private static var runtimeMark: UInt64 { 0x8000_0000_FFFF_FFFF }
    /// The top bit of the strong count.
    private static var highStrongBit: UInt64 { 0x4000_0000_0000_0000 }

    /// Raises the strong count of a freshly made immortal object, so that releases see the
    /// mark as retains do.
    ///
    /// Both fast paths add to the whole reference-count word and look at its top bit: a
    /// retain adds one strong reference (2^33), a release subtracts one. When the object had
    /// no other reference as it was marked (an entity, marked from its initializer), its
    /// strong count is zero: a release's subtraction borrows out of the top bit, the word looks
    /// like an ordinary count, and from then on every retain and release updates it with an
    /// atomic compare-and-swap (about 11 ns each, on a cache line every thread shares; measured
    /// on the Swift 6.3 runtime). With the strong count's top bit set, both the addition and
    /// the subtraction keep the word's top bit, and both operations read the word and return.
    /// Done only when the word is exactly the known mark with a strong count of zero (the one
    /// case that needs it; another runtime may mark differently), while the object is not yet
    /// shared (a model being loaded).
    private static func markForBothFastPaths(_ pointer: UnsafeMutableRawPointer) {
        guard MemoryLayout<Int>.size == 8 else { return }
        let word = pointer + MemoryLayout<UInt>.size   // after the object's type
        if word.load(as: UInt64.self) == runtimeMark { word.storeBytes(of: runtimeMark | highStrongBit, as: UInt64.self) }
    }

    /// Makes an array's storage immortal (where an array is one reference to its native
    /// storage; elsewhere, and for empty arrays, whose storage is static, it does nothing).
    static func make<Element>(storageOf array: [Element]) {
        #if !canImport(ObjectiveC)
        guard array.capacity > 0, MemoryLayout<[Element]>.size == MemoryLayout<AnyObject>.size else { return }
        make(unsafeBitCast(array, to: AnyObject.self))
        #endif
    }

    /// Makes a dictionary's storage immortal (where a dictionary is one reference to its
    /// native storage; empty dictionaries share static storage already).
    static func make<Key, Value>(storageOf dictionary: [Key: Value]) {
        #if !canImport(ObjectiveC)
        guard !dictionary.isEmpty, MemoryLayout<[Key: Value]>.size == MemoryLayout<AnyObject>.size else { return }
        make(unsafeBitCast(dictionary, to: AnyObject.self))
        #endif
    }
}

extension EntityDescription {
    /// Makes the entity's lists and property descriptions immortal, once the model that loads
    /// it has set them: they live as long as the entity (for ever), and hot paths read them per
    /// object (a save's passes, validation, fetched rows), each read a retain and a release on
    /// a buffer every thread shares. A list changed later is copied first, as any shared buffer.
    func makeStorageImmortal() {
        Immortal.make(storageOf: subentities)
        Immortal.make(storageOf: properties)
        Immortal.make(storageOf: propertiesByName)
        Immortal.make(storageOf: attributes)
        Immortal.make(storageOf: attributesByName)
        Immortal.make(storageOf: relationships)
        Immortal.make(storageOf: relationshipsByName)
        Immortal.make(storageOf: descendantNumbers)
        Immortal.make(storageOf: storedProperties)
        Immortal.make(storageOf: storedAttributeSlots)
        Immortal.make(storageOf: isStoredAttributeSlot)
        Immortal.make(storageOf: requiredAttributeSlots)
        Immortal.make(storageOf: constrainedRelationships)
        Immortal.make(storageOf: ruledAttributes)
        Immortal.make(storageOf: foreignKeyRelationships)
        for p in properties { Immortal.make(p) }
    }
}
