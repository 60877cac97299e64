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
        _swift_stdlib_immortalize(Unmanaged.passUnretained(object).toOpaque())
    }

    /// Makes an array's storage immortal (where an array is one reference to its native
    /// storage; elsewhere, and for empty arrays, whose storage is static, it does nothing).
    static func make<Element>(storageOf array: [Element]) {
        #if !canImport(ObjectiveC)
        guard array.capacity > 0, MemoryLayout<[Element]>.size == MemoryLayout<AnyObject>.size else { return }
        make(unsafeBitCast(array, to: AnyObject.self))
        #endif
    }
}
