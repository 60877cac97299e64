import Foundation

/// The layout of the last entity a row reader saw: consecutive rows are almost always of the
/// same entity, so this saves two dictionary lookups per row.
struct PostgreSQLRowLayout {
    var number = -1
    var entity: EntityDescription?
    /// The result column of each slot, or -1 for a slot that takes its initial value.
    var columnBySlot: [Int32] = []
    var initialValues: [StoredValue] = []

    init() {}

    init(number: Int, entity: EntityDescription, mapping: [(column: Int32, slot: Int)], columnCount: Int) {
        self.number = number
        self.entity = entity
        let initial = entity.initialValues
        var columns = [Int32](repeating: -1, count: initial.count)
        for (column, slot) in mapping where slot >= 0 && slot < columns.count && Int(column) < columnCount { columns[slot] = column }
        self.columnBySlot = columns
        self.initialValues = initial
    }
}

extension PostgreSQLStore {
    /// Test hook: called with the store's location and the number of rows as each chunk of a
    /// fetch read through a cursor arrives, before its rows are handed over; an error it throws
    /// stops the fetch.
    nonisolated(unsafe) static var chunkHook: (@Sendable (String, Int) throws -> Void)?

    /// Reads the rows of a result whose columns are `plan`'s (`Z_PK`, `Z_ENT`, `Z_OPT`, then the
    /// columns), making each with `make` (from its entity, key, version and values by slot).
    @inline(__always)
    func readRows(
        _ result: PostgreSQLRows, plan: SelectPlan, layout: inout PostgreSQLRowLayout,
        _ make: (EntityDescription, Int64, Int64, consuming [StoredValue]) -> Void
    ) throws(CoherenceError) {
        // Rows come in runs of one entity (every row, when the fetch has one). Each run takes its
        // entity's layout into constants once, so that filling a row's values borrows the
        // layout's arrays instead of counting references to them per row; each row's array is
        // made at its final size from a collection of known count (one specialized allocation,
        // no capacity check per value).
        let rowCount = Int32(result.count)
        var r: Int32 = 0
        while r < rowCount {
            let (number, first) = try entityNumber(result, row: r, plan: plan)
            if layout.number != number {
                guard let e = plan.entities[number], let m = plan.mapping[number] else {
                    throw CoherenceError(
                        .corruptRow, "Row \(first) has entity number \(number), which is not in this hierarchy.",
                        store: locationDescription)
                }
                layout = PostgreSQLRowLayout(number: number, entity: e, mapping: m, columnCount: result.columnCount)
            }
            guard let entity = layout.entity else {
                throw CoherenceError(.corruptRow, "Row \(first) has no entity.", store: locationDescription)
            }
            let columns = layout.columnBySlot, initial = layout.initialValues
            while true {
                guard let pk = result.integer(r, 0), let version = result.integer(r, 2) else {
                    throw CoherenceError(.corruptRow, "A row has no key or version.", store: locationDescription)
                }
                let row = r
                let values = columns.withUnsafeBufferPointer { columns in
                    initial.withUnsafeBufferPointer { initial in
                        [StoredValue](
                            columns.indices.lazy.map { slot in
                                let column = columns[slot]
                                return column >= 0 ? result.value(row, column) : initial[slot]
                            })
                    }
                }
                make(entity, pk, version, values)
                r += 1
                guard r < rowCount else { break }
                if plan.singleEntityNumber == nil, try entityNumber(result, row: r, plan: plan).number != number { break }
            }
        }
    }

    /// The entity number of row `row` of `result` (-1: none) and, for messages, the row's key.
    private func entityNumber(_ result: PostgreSQLRows, row: Int32, plan: SelectPlan) throws(CoherenceError) -> (number: Int, key: Int64) {
        guard let pk = result.integer(row, 0) else {
            throw CoherenceError(.corruptRow, "A row has no key or version.", store: locationDescription)
        }
        // A hierarchy of one entity selects its number as a constant, not read here.
        return (plan.singleEntityNumber ?? result.integer(row, 1).map(Int.init) ?? -1, pk)
    }

    /// The rows of a result whose columns are `plan`'s, as ``StoreRow``s.
    func rows(_ result: PostgreSQLRows, plan: SelectPlan) throws(CoherenceError) -> [StoreRow] {
        var rows: [StoreRow] = []
        rows.reserveCapacity(result.count)
        var layout = PostgreSQLRowLayout()
        try readRows(result, plan: plan, layout: &layout) { entity, pk, version, values in
            rows.append(StoreRow(entity: entity, primaryKey: pk, version: version, values: values))
        }
        return rows
    }

    package func fetch(_ fetch: StoreFetch) throws(CoherenceError) -> [StoreRow] {
        let plan = self.plan(for: fetch.entity)
        let (sql, bindings) = try generator.select(fetch, plan: plan, storeIdentifier: identifier)
        return try withReader(fetch.generation?.snapshot(of: identifier)) { c in
            try c.query(numbered(sql), bindings) { result in try rows(result, plan: plan) }
        }
    }

    /// Hands the rows over as they are read. A fetch expected to return many rows (its SQL
    /// returned at least ``chunking``'s `minimumRows` the last time it ran, and its limit allows
    /// as many) reads through a cursor in chunks sent ahead in one pipeline
    /// (`PostgreSQLConnection.query(_:_:chunkSize:chunks:_:)`), so that the server produces the
    /// next rows while this one makes values of the last; other fetches take one round trip.
    /// Either way every row comes from one snapshot: the fetch's query generation's, or the
    /// statement's (the cursor's own transaction).
    package func fetch(
        _ fetch: StoreFetch, expecting expect: (Int) -> Void,
        each body: RowReceiver
    ) throws(CoherenceError) {
        let plan = self.plan(for: fetch.entity)
        let (generated, bindings) = try generator.select(fetch, plan: plan, storeIdentifier: identifier)
        let sql = numbered(generated)
        let expected = min(rowCounts.withLock { $0[sql] } ?? 0, fetch.limit ?? .max)
        let (minimumRows, chunkSize) = chunking.withLock { $0 }
        expect(expected)
        var count = 0
        try withReader(fetch.generation?.snapshot(of: identifier)) { c in
            var ids = ObjectID.RowIDs(storeIdentifier: identifier)
            var layout = PostgreSQLRowLayout()
            func read(_ result: PostgreSQLRows) throws(CoherenceError) {
                try readRows(result, plan: plan, layout: &layout) { entity, pk, version, values in
                    body(ids.next(entity: entity, primaryKey: pk), version, values)
                    count &+= 1
                }
            }
            guard expected >= minimumRows else { return try c.query(sql, bindings, read) }
            let location = locationDescription
            do {
                try c.query(sql, bindings, chunkSize: chunkSize, chunks: min(expected / chunkSize, 1_000)) { result in
                    try Self.chunkHook?(location, result.count)
                    try read(result)
                }
            } catch let error as PostgreSQLError where count > 0 {
                // Rows were handed over: a lost connection is not retried (they would come twice).
                throw storeError(.storeReadFailed, error, "Reading the store failed")
            }
        }
        rowCounts.withLock { counts in
            if counts.count >= Self.numberedLimit { counts.removeAll(keepingCapacity: true) }
            counts[sql] = count
        }
    }
}
