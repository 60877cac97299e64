import Foundation

extension FetchRequest {
    /// The request with `predicate` as its filter (replacing the one it had).
    ///
    /// ```swift
    /// let request = FetchRequest<Person>().where(\.age >= 18).sorted([.ascending(\.name)])
    /// ```
    public func `where`(_ predicate: Predicate<Entity>?) -> FetchRequest {
        var copy = self
        copy.predicate = predicate
        return copy
    }

    /// The request with `descriptors` as its ordering (replacing the one it had).
    public func sorted(_ descriptors: [SortDescriptor<Entity>]) -> FetchRequest {
        var copy = self
        copy.sortDescriptors = descriptors
        return copy
    }
}

extension SortDescriptor where Compared: ManagedObject {
    /// Ascending order of a property (strings by code points; nil first).
    ///
    /// ```swift
    /// FetchRequest<Person>().sorted([.ascending(\.name), .descending(\.createdAt)])
    /// ```
    public static func ascending<V: Comparable>(_ keyPath: KeyPath<Compared, V> & Sendable) -> SortDescriptor {
        SortDescriptor(keyPath, order: .forward)
    }

    /// Ascending order of an optional property (nil first).
    public static func ascending<V: Comparable>(_ keyPath: KeyPath<Compared, V?> & Sendable) -> SortDescriptor {
        SortDescriptor(keyPath, order: .forward)
    }

    /// Descending order of a property (nil last).
    public static func descending<V: Comparable>(_ keyPath: KeyPath<Compared, V> & Sendable) -> SortDescriptor {
        SortDescriptor(keyPath, order: .reverse)
    }

    /// Descending order of an optional property (nil last).
    public static func descending<V: Comparable>(_ keyPath: KeyPath<Compared, V?> & Sendable) -> SortDescriptor {
        SortDescriptor(keyPath, order: .reverse)
    }
}
