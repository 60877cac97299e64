/// A fetch as a store executes it.
package struct StoreFetch: Sendable {
    /// The entity fetched.
    package var entity: EntityDescription
    /// Whether rows of sub-entities are included.
    package var includesSubentities: Bool = true
    /// The filter, or nil for every row.
    package var predicate: QueryExpression?
    /// The ordering.
    package var sortKeys: [SortKey] = []
    /// The maximum number of rows (nil: no limit).
    package var limit: Int?
    /// Rows to skip.
    package var offset: Int = 0
    /// The query generation to read (nil: the stores as they are now).
    package var generation: QueryGeneration?

    package init(
        entity: EntityDescription, includesSubentities: Bool = true, predicate: QueryExpression? = nil,
        sortKeys: [SortKey] = [], limit: Int? = nil, offset: Int = 0
    ) {
        self.entity = entity
        self.includesSubentities = includesSubentities
        self.predicate = predicate
        self.sortKeys = sortKeys
        self.limit = limit
        self.offset = offset
    }
}
