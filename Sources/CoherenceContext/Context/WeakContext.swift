/// A weak reference to a context.
struct WeakContext: @unchecked Sendable {
    // @unchecked Sendable: a weak reference to a Sendable class.
    weak var context: ManagedObjectContext?
    init(_ context: ManagedObjectContext) { self.context = context }
}
