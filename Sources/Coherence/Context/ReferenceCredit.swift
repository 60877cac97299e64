/// Strong references to one shared object, paid for in advance in bulk.
///
/// A fetch hands every object it makes a reference to its context's handle and to its fetch
/// group. Retaining the handle or the group once per object is an atomic operation per object
/// on one shared cache line (about 11 ns each on the 2-core benchmark machine: 2 % of a fetch
/// of 100,000 rows per reference). A credit retains the object 1,024 times in one atomic
/// operation (the runtime's `swift_retain_n`) and hands the references out one by one; when
/// the credit ends, it releases the ones left over in one more.
///
/// Every reference handed out is a real, counted strong reference from the moment it is
/// handed out: its holder releases it as usual (one by one, from any thread), and code that
/// runs meanwhile (a subclass's initializer that resets the context, say) sees consistent
/// counts. The credit only holds more references than it has handed out.
///
/// ```swift
/// var credit = ReferenceCredit(handle)
/// object._handleReference = credit.take()   // +1, counted, no atomic operation
/// ```
struct ReferenceCredit<Object: AnyObject>: ~Copyable {
    /// How many references one top-up buys.
    static var batch: UInt32 { 1024 }

    private let object: Unmanaged<Object>
    private var available: UInt32 = 0

    init(_ object: Object) {
        self.object = .passUnretained(object)
    }

    /// A +1 reference to the object, for a holder that will release it.
    @inline(__always)
    mutating func take() -> Unmanaged<Object> {
        if available == 0 {
            guard let retainN = BulkReferenceCounting.retainN else { return object.retain() }
            _ = retainN(object.toOpaque(), Self.batch)
            available = Self.batch
        }
        available &-= 1
        return object
    }

    deinit {
        if available > 0, let releaseN = BulkReferenceCounting.releaseN { releaseN(object.toOpaque(), available) }
    }
}

/// The runtime's bulk reference counting (`swift_retain_n` and `swift_release_n`, exported by
/// every Swift runtime, declared in its `HeapObject.h` with the C calling convention), looked up
/// once. Both or neither: without them a credit retains one reference at a time.
private enum BulkReferenceCounting {
    typealias RetainN = @convention(c) (UnsafeMutableRawPointer, UInt32) -> UnsafeMutableRawPointer
    typealias ReleaseN = @convention(c) (UnsafeMutableRawPointer, UInt32) -> Void

    static let functions: (retainN: RetainN, releaseN: ReleaseN)? = {
        guard let retain = dlsym(defaultSymbolScope, "swift_retain_n"),
              let release = dlsym(defaultSymbolScope, "swift_release_n") else { return nil }
        return (unsafeBitCast(retain, to: RetainN.self), unsafeBitCast(release, to: ReleaseN.self))
    }()
    static var retainN: RetainN? { functions?.retainN }
    static var releaseN: ReleaseN? { functions?.releaseN }
}

#if canImport(Darwin)
import Darwin
private var defaultSymbolScope: UnsafeMutableRawPointer? { UnsafeMutableRawPointer(bitPattern: -2) }   // RTLD_DEFAULT
#elseif canImport(Glibc)
import Glibc
private var defaultSymbolScope: UnsafeMutableRawPointer? { nil }   // RTLD_DEFAULT
#elseif canImport(Musl)
import Musl
private var defaultSymbolScope: UnsafeMutableRawPointer? { nil }   // RTLD_DEFAULT
#endif
