import Foundation

#if !canImport(UIKit) && !canImport(AppKit)
// UIKit and AppKit give `IndexPath` its section accessors; elsewhere (Linux) Coherence does, so
// that code using a fetched-results controller reads the same on every platform.
extension IndexPath {
    /// An index path of two indexes: a section and an item in it.
    ///
    /// ```swift
    /// let first = try controller.object(at: IndexPath(item: 0, section: 0))
    /// ```
    public init(item: Int, section: Int) { self.init(indexes: [section, item]) }

    /// An index path of two indexes: a section and a row in it (the same as `init(item:section:)`).
    public init(row: Int, section: Int) { self.init(indexes: [section, row]) }

    /// The first index: the section.
    public var section: Int { isEmpty ? 0 : self[0] }

    /// The second index: the item in the section.
    public var item: Int { count < 2 ? 0 : self[1] }

    /// The second index: the row in the section (the same as ``item``).
    public var row: Int { item }
}
#endif
