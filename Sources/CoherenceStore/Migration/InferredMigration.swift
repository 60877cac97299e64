import CoherenceBase
import Foundation

/// A lightweight migration inferred from the schema a SQLite store recorded (``StoredSchema``) and
/// the entities of the new model: entities, attributes and relationships added, removed or
/// renamed (through renaming identifiers), optional ↔ required, to-one ↔ to-many, an entity moved
/// under a new parent, numeric widening, index and uniqueness changes.
///
/// ``run(on:)`` works inside the caller's transaction: a table whose layout changed is renamed,
/// made again and filled with one `INSERT … SELECT`; a table that only gains columns valid for
/// every row gets `ALTER TABLE … ADD COLUMN`; a table that did not change is left alone. Anything
/// that cannot be inferred, or that the data does not allow, throws before the store is written
/// or inside the transaction, so the caller's rollback leaves the store as it was.
package struct InferredMigration {
    let old: StoredSchema
    let entities: [EntityDescription]
    let model: ManagedObjectModel
    let store: String
    /// The SQL of the store's dialect.
    let generator: SQLGenerator
    /// The old entity each new entity's rows come from, by new entity name.
    let sources: [String: StoredSchema.Entity]
    /// Test hook: called with the name of each step as it starts (a test stops the process there).
    nonisolated(unsafe) package static var stepHook: ((String) -> Void)?
    /// Test hook: called with the store, the rows copied so far and the rows to copy in all, as
    /// progress moves.
    package static let progressObserver = LockedValue<(@Sendable (_ store: String, _ completed: Int64, _ total: Int64) -> Void)?>(nil)
    /// How many rows a table copy copies between two progress reports.
    static let chunkRows = 65_536

    /// Prefix of an old table while the migration runs.
    static let oldPrefix = "Z_MIGRATING_"

    /// How a new column gets its values, over the old table aliased `o`.
    enum Source: Equatable {
        case null
        /// An old column, unchanged.
        case column(String)
        /// Any other expression over `o` (a constant, a COALESCE, a CASE).
        case expression(String)
        /// The destination of a to-one relationship kept differently before (pairs table index).
        case pairs(Int)
    }

    /// Where the (source, destination) pairs of an old relationship are.
    struct PairsSource {
        /// The SELECT over the old tables (named by the closure, which knows which were renamed).
        var select: (_ oldTable: (String) -> String) -> String
    }

    struct TablePlan {
        var root: EntityDescription
        var oldRoot: String?
        var columns: [(property: PropertyDescription, source: Source)]
        /// (old number, new number) of every concrete entity whose rows move.
        var numbers: [(old: Int, new: Int)]
        var mode: Mode
        enum Mode { case unchanged, addColumns, rebuild }
    }

    package init(
        old: StoredSchema, entities: [EntityDescription], model: ManagedObjectModel, store: String, dialect: SQLDialect = .sqlite
    ) throws(CoherenceError) {
        self.generator = SQLGenerator(dialect: dialect)
        self.old = old
        self.entities = entities
        self.model = model
        self.store = store
        let oldByName = old.entitiesByName
        var sources: [String: StoredSchema.Entity] = [:]
        var taken: [String: String] = [:]
        for e in entities {
            guard let name = [e.renamingIdentifier, e.name].compactMap({ $0 }).first(where: { oldByName[$0] != nil }),
                let source = oldByName[name]
            else { continue }
            if let other = taken[source.name] {
                throw CoherenceError(
                    .migrationNotInferable, "Entities '\(other)' and '\(e.name)' both take the rows of '\(source.name)'.",
                    entity: e.name, store: store)
            }
            taken[source.name] = e.name
            sources[e.name] = source
        }
        // A model with none of the store's entities is another model, not a new version: a
        // migration would drop every table.
        guard !sources.isEmpty || old.entities.isEmpty else {
            throw CoherenceError(
                .storeIncompatible,
                "The store was made for another model: none of its entities (\(old.entities.map(\.name).sorted().joined(separator: ", "))) is in this model.",
                store: store)
        }
        self.sources = sources
    }

    // MARK: Planning

    /// The old stored attribute a new attribute takes its values from, for rows of `entity`.
    func oldAttribute(_ a: AttributeDescription, of entity: EntityDescription) -> StoredSchema.Attribute? {
        guard let source = sources[entity.name] else { return nil }
        let all = old.allAttributes(of: source.name)
        for name in [a.renamingIdentifier, a.name].compactMap({ $0 }) {
            if let found = all.first(where: { $0.name == name }) { return found }
        }
        return nil
    }

    /// The old relationship a new relationship takes its pairs from, and whether they are reversed
    /// (found through the inverse).
    func oldRelationship(_ r: RelationshipDescription) -> (entity: String, relationship: StoredSchema.Relationship, reversed: Bool)? {
        func find(_ r: RelationshipDescription) -> (String, StoredSchema.Relationship)? {
            guard let owner = r.entity else { return nil }
            // The entity's own, or a sub-entity's (the relationship moved up to the entity).
            for e in SQLGenerator.hierarchy(of: owner) {
                guard let source = sources[e.name] else { continue }
                let all = old.allRelationships(of: source.name)
                for name in [r.renamingIdentifier, r.name].compactMap({ $0 }) {
                    if let found = all.first(where: { $0.relationship.name == name }) { return (found.declaredBy, found.relationship) }
                }
            }
            return nil
        }
        if let (e, rel) = find(r) { return (e, rel, false) }
        if let inverse = r.inverseRelationship, let (e, rel) = find(inverse) { return (e, rel, true) }
        return nil
    }

    /// The pairs (source key, destination key) of an old relationship.
    func pairs(of entity: String, _ r: StoredSchema.Relationship, reversed: Bool) -> PairsSource? {
        let byName = old.entitiesByName
        let (src, dst) = reversed ? ("dst", "src") : ("src", "dst")
        switch r.storage {
        case "fk":
            guard let root = byName[entity]?.root else { return nil }
            let column = generator.dialect.quote(r.name)
            return PairsSource { table in
                "SELECT Z_PK AS \(src), \(column) AS \(dst) FROM \(table(root)) WHERE \(column) IS NOT NULL"
            }
        case "inverse":
            guard let inverse = r.inverse, let destination = byName[r.destination] else { return nil }
            // A to-one that is its own inverse recorded as kept by its inverse had no column:
            // it has no pairs to copy.
            if inverse == r.name && !r.isToMany
                && old.allRelationships(of: r.destination).contains(where: { $0.declaredBy == entity && $0.relationship.name == inverse })
            {
                return nil
            }
            let column = generator.dialect.quote(inverse)
            return PairsSource { table in
                "SELECT \(column) AS \(src), Z_PK AS \(dst) FROM \(table(destination.root)) WHERE \(column) IS NOT NULL"
            }
        default:
            guard let join = r.joinTable else { return nil }
            let first = r.sourceIsFirst ?? true
            let (a, b) = first ? ("Z_1", "Z_2") : ("Z_2", "Z_1")
            return PairsSource { table in "SELECT \(a) AS \(src), \(b) AS \(dst) FROM \(table(join))" }
        }
    }

    /// Throws when a relationship kept from the old version (same name, or its renaming
    /// identifier) now leads to an entity whose rows come from another table than its old
    /// destination's: its keys would name unrelated objects of the new destination.
    func checkDestinations() throws(CoherenceError) {
        let byName = old.entitiesByName
        for e in entities {
            for r in e.relationships where r.entity === e && !r.isTransient {
                guard let destination = r.destinationEntity, let (entity, rel, reversed) = oldRelationship(r) else { continue }
                let oldDestination = reversed ? entity : rel.destination
                let oldTable = byName[oldDestination]?.root
                let newTable = SQLGenerator.hierarchy(of: destination.rootEntity).lazy.compactMap { self.sources[$0.name]?.root }.first
                guard oldTable != newTable else { continue }
                throw CoherenceError(
                    .migrationNotInferable,
                    "Relationship '\(e.name).\(r.name)' now leads to '\(destination.name)', whose rows do not come from those of '\(oldDestination)', "
                        + "which it led to: its objects cannot be found. Give it another name to start it empty.",
                    entity: e.name, property: r.name, store: store)
            }
        }
    }

    /// Plans every table of the new model, and the relationships whose pairs must be copied.
    func plan() throws(CoherenceError) -> (tables: [TablePlan], pairs: [PairsSource]) {
        try checkDestinations()
        var plans: [TablePlan] = []
        var pairSources: [PairsSource] = []
        let oldByName = old.entitiesByName
        let roots = entities.filter { $0.superentity == nil }
        for root in roots {
            let hierarchy = SQLGenerator.hierarchy(of: root)
            let oldRoots = Set(hierarchy.compactMap { sources[$0.name]?.root })
            guard oldRoots.count <= 1 else {
                throw CoherenceError(
                    .migrationNotInferable,
                    "The entities of '\(root.name)' come from the tables of \(oldRoots.sorted().joined(separator: " and ")), whose keys may collide.",
                    entity: root.name, store: store)
            }
            let oldRoot = oldRoots.first
            var numbers: [(old: Int, new: Int)] = []
            for e in hierarchy {
                if let s = sources[e.name] { numbers.append((s.number, e.entityNumber)) }
            }
            var columns: [(PropertyDescription, Source)] = []
            for p in SQLGenerator.storedColumns(of: hierarchy) {
                let owners = hierarchy.filter { $0.propertiesByName[p.name] === p }
                if let a = p as? AttributeDescription {
                    columns.append((p, try source(of: a, owners: owners, allEntities: owners.count == hierarchy.count)))
                } else if let r = p as? RelationshipDescription {
                    guard let (entity, rel, reversed) = oldRelationship(r) else {
                        columns.append((p, .null))
                        continue
                    }
                    if rel.storage == "fk" && !reversed {
                        columns.append((p, onlyForOwners(.column(rel.name), oldName: rel.name, owners: owners)))
                    } else if let pairs = pairs(of: entity, rel, reversed: reversed) {
                        columns.append((p, .pairs(pairSources.count)))
                        pairSources.append(pairs)
                    } else {
                        columns.append((p, .null))
                    }
                }
            }
            let oldHierarchy = Set(old.entities.filter { $0.root == oldRoot }.map(\.name))
            let sameEntities =
                oldRoot == root.name && numbers.allSatisfy { $0.old == $0.new }
                && oldHierarchy == Set(hierarchy.compactMap { sources[$0.name]?.name })
            let oldColumns = oldRoot.map { r in
                old.entities.filter { $0.root == r }.flatMap { e in
                    e.attributes.map(\.name) + e.relationships.filter { $0.storage == "fk" }.map(\.name)
                }
            }
            var mode = TablePlan.Mode.rebuild
            if sameEntities, let oldColumns {
                let kept = columns.prefix(oldColumns.count)
                let keptUnchanged =
                    kept.count == oldColumns.count
                    && zip(kept, oldColumns).allSatisfy { pair in
                        pair.0.1 == .column(pair.1) && pair.0.0.name == pair.1 && sameColumnType(pair.0.0, oldRoot: oldRoot, in: oldByName)
                    }
                let addedAreConstants = columns.dropFirst(oldColumns.count).allSatisfy { c in
                    switch c.1 {
                    case .null: return true
                    case .expression(let sql): return !sql.contains("o.")
                    default: return false
                    }
                }
                if keptUnchanged && addedAreConstants {
                    mode = columns.count == oldColumns.count ? .unchanged : .addColumns
                }
            }
            plans.append(TablePlan(root: root, oldRoot: oldRoot, columns: columns, numbers: numbers, mode: mode))
        }
        return (plans, pairSources)
    }

    /// Whether a kept column's declared SQL type is the same as before.
    private func sameColumnType(_ p: PropertyDescription, oldRoot: String?, in oldByName: [String: StoredSchema.Entity]) -> Bool {
        guard let a = p as? AttributeDescription else { return true }
        let oldType = old.entities.filter { $0.root == oldRoot }.flatMap(\.attributes).first { $0.name == a.name }?.type
        guard let oldType, let type = AttributeType.named(oldType) else { return false }
        return generator.dialect.columnType(type) == generator.dialect.columnType(a.type)
    }

    /// Where a new attribute's column takes its values: the old column (the same or a renamed
    /// attribute), its default value, or nothing.
    func source(of a: AttributeDescription, owners: [EntityDescription], allEntities: Bool) throws(CoherenceError) -> Source {
        var oldNames = Set<String>()
        var wasOptional = false
        // Old numbers of the entities whose rows had no such attribute (it moved up to a parent):
        // theirs take the default, as an added attribute's do.
        var lacking: [Int] = []
        for e in owners {
            guard let found = oldAttribute(a, of: e) else {
                if let number = sources[e.name]?.number { lacking.append(number) }
                continue
            }
            guard let oldType = AttributeType.named(found.type), oldType.widens(to: a.type) else {
                throw CoherenceError(
                    .migrationNotInferable,
                    "Attribute '\(e.name).\(a.name)' changes type from \(found.type) to \(a.type), which is not a widening (Integer 16 → 32 → 64, Float → Double).",
                    entity: e.name, property: a.name, store: store)
            }
            oldNames.insert(found.name)
            wasOptional = wasOptional || found.isOptional
        }
        guard oldNames.count <= 1 else {
            throw CoherenceError(
                .migrationNotInferable,
                "Attribute '\(a.name)' takes its values from several old attributes (\(oldNames.sorted().joined(separator: ", "))).",
                entity: a.entity?.name, property: a.name, store: store)
        }
        let defaultSQL = a.defaultValue.flatMap { $0.isNull ? nil : generator.literal($0, type: a.type) }
        let column = oldNames.first.map { "o." + generator.dialect.quote($0) }
        let kept = try source(
            of: a, oldName: oldNames.first, column: column, defaultSQL: defaultSQL, wasOptional: wasOptional, lacking: lacking,
            owners: owners,
            allEntities: allEntities)
        guard let oldName = oldNames.first else { return kept }
        return onlyForOwners(kept, oldName: oldName, owners: owners)
    }

    /// `source`, for the rows of `owners` only, when rows of other entities of the table had the
    /// old property `oldName` (it moved down to a sub-entity): those keep no value, so that one
    /// moved up again later does not find it.
    func onlyForOwners(_ source: Source, oldName: String, owners: [EntityDescription]) -> Source {
        let ownerNumbers = owners.compactMap { sources[$0.name]?.number }
        guard let oldRoot = owners.lazy.compactMap({ self.sources[$0.name]?.root }).first else { return source }
        let others = old.entities.filter { e in
            e.root == oldRoot && !e.isAbstract && !ownerNumbers.contains(e.number)
                && (old.allAttributes(of: e.name).contains { $0.name == oldName }
                    || old.allRelationships(of: e.name).contains { $0.relationship.name == oldName && $0.relationship.storage == "fk" })
        }
        guard !others.isEmpty else { return source }
        return .expression("CASE WHEN o.Z_ENT IN (\(ownerNumbers.map(String.init).joined(separator: ", "))) THEN \(sql(source)) END")
    }

    /// The source of an attribute's column from what ``source(of:owners:allEntities:)`` found.
    private func source(
        of a: AttributeDescription, oldName: String?, column: String?, defaultSQL: String?, wasOptional: Bool, lacking: [Int],
        owners: [EntityDescription],
        allEntities: Bool
    ) throws(CoherenceError) -> Source {
        switch (column, defaultSQL) {
        case (let column?, let d?) where !lacking.isEmpty:
            let value = !a.isOptional && wasOptional ? "COALESCE(\(column), \(d))" : column
            let numbers = lacking.map(String.init).joined(separator: ", ")
            return .expression("CASE WHEN o.Z_ENT IN (\(numbers)) THEN \(d) ELSE \(value) END")
        case (let column?, let d?) where !a.isOptional && wasOptional:
            return .expression("COALESCE(\(column), \(d))")
        case (_?, _):
            return .column(oldName ?? a.name)
        case (nil, let d?):
            if allEntities { return .expression(d) }
            let numbers = owners.compactMap { sources[$0.name]?.number }.map(String.init).joined(separator: ", ")
            return .expression("CASE WHEN o.Z_ENT IN (\(numbers)) THEN \(d) END")
        case (nil, nil):
            return .null
        }
    }

    /// The SQL of a planned source over `o`, with `pairsTable` naming the pairs tables.
    func sql(_ source: Source) -> String {
        switch source {
        case .null: return "NULL"
        case .column(let name): return "o." + generator.dialect.quote(name)
        case .expression(let sql): return sql
        case .pairs(let i): return "(SELECT min(p.dst) FROM \(Self.pairsTable(i)) p WHERE p.src = o.Z_PK)"
        }
    }

    /// The order column beside an old foreign-key column (see ``SQLGenerator/orderColumnName(_:)``).
    static func orderColumnName(_ column: String) -> String {
        "Z_FOK_" + (column.hasPrefix("Z") ? String(column.dropFirst()) : column)
    }

    static func pairsTable(_ i: Int) -> String { "\"\(oldPrefix)PAIRS_\(i)\"" }

    // MARK: Running

    /// Migrates the SQLite store on `c`, inside the caller's transaction (with foreign keys off).
    @discardableResult
    package func run(on c: SQLiteConnection) throws -> Int {
        try run(on: SQLiteMigrationDatabase(c))
    }

    /// Migrates the store on `c`, inside the caller's transaction (for SQLite, with foreign keys
    /// off). Reports progress with rows as units (see `Progress`) and logs each table it copies.
    /// - Returns: the number of rows copied.
    @discardableResult
    package func run(on c: any MigrationDatabase) throws -> Int {
        let (plans, pairSources) = try plan()
        let q = generator.dialect.quote
        let renamed = Set(
            old.entities.map(\.root).filter { oldRoot in
                !plans.contains { $0.mode != .rebuild && $0.root.name == oldRoot }
            })
        let oldJoinTables = Set(old.entities.flatMap { $0.relationships.compactMap(\.joinTable) })
        func oldTable(_ name: String) -> String {
            renamed.contains(name) || oldJoinTables.contains(name) ? q(Self.oldPrefix + name) : q(name)
        }

        // Rows of an entity that is abstract now, before anything is written: no object could be
        // made of them, and no migration can choose a sub-entity for them.
        for plan in plans {
            guard let oldRoot = plan.oldRoot else { continue }
            for e in SQLGenerator.hierarchy(of: plan.root) where e.isAbstract {
                guard let source = sources[e.name] else { continue }
                let count = try c.integer("SELECT count(*) FROM \(q(oldRoot)) WHERE Z_ENT = \(source.number)")
                if count > 0 {
                    throw CoherenceError(
                        .migrationNotInferable,
                        "Entity '\(e.name)' is abstract in the new model, but the store holds \(count) row\(count == 1 ? "" : "s") of '\(source.name)': a migration cannot choose a sub-entity for them (a custom stage of a staged migration can copy them into a sub-entity and delete them first).",
                        entity: e.name, store: store)
                }
            }
        }

        // Required attributes without values, before anything is written.
        for plan in plans {
            guard let oldRoot = plan.oldRoot else { continue }
            for (p, source) in plan.columns {
                guard let a = p as? AttributeDescription, !a.isOptional else { continue }
                let owners = SQLGenerator.hierarchy(of: plan.root).filter { $0.propertiesByName[a.name] === a && !$0.isAbstract }
                // Values that cannot be nil need no look: an old required attribute's, or a default.
                switch source {
                case .column: if !owners.contains(where: { oldAttribute(a, of: $0)?.isOptional ?? true }) { continue }
                case .expression(let sql): if !sql.contains("o.") || sql.hasPrefix("COALESCE") { continue }
                default: break
                }
                let numbers = owners.compactMap { sources[$0.name]?.number }
                guard !numbers.isEmpty else { continue }
                let count = try c.integer(
                    "SELECT count(*) FROM \(q(oldRoot)) o WHERE o.Z_ENT IN (\(numbers.map(String.init).joined(separator: ", "))) AND (\(sql(source))) IS NULL"
                )
                if count > 0 {
                    throw CoherenceError(
                        .migrationMissingValues,
                        "Attribute '\(a.entity?.name ?? plan.root.name).\(a.name)' is required and has no default value, but \(count) existing row\(count == 1 ? "" : "s") have no value for it.",
                        entity: a.entity?.name ?? plan.root.name, property: a.name, store: store)
                }
            }
        }

        var total: Int64 = 0
        for plan in plans where plan.mode == .rebuild {
            if let oldRoot = plan.oldRoot {
                total += try c.integer("SELECT count(*) FROM \(q(oldRoot))")
            }
        }
        // Rows are the units; a caller's current `Progress` (`becomeCurrent(withPendingUnitCount:)`)
        // becomes its parent.
        let progress = Progress(totalUnitCount: max(total, 1))
        let counters = try c.rows("SELECT Z_NAME, Z_MAX FROM Z_PRIMARYKEY", []).compactMap { row -> (String, Int64)? in
            guard row.count == 2, case .text(let name) = row[0], case .integer(let largest) = row[1] else { return nil }
            return (name, largest)
        }
        let oldCounters = Dictionary(counters, uniquingKeysWith: { max($0, $1) })

        // Old tables that change are renamed, without their indexes (the new ones take the names).
        Self.stepHook?("rename")
        for name in renamed.union(oldJoinTables).sorted() {
            for index in try c.texts(generator.migrationIndexesOfTable, [.text(name)]) {
                try c.execute(generator.setAsideIndex(index, prefix: Self.oldPrefix))
            }
            try c.execute("ALTER TABLE \(q(name)) RENAME TO \(q(Self.oldPrefix + name))")
        }
        let schema = generator.createSchema(for: entities)
        // Tables that are kept (unchanged, or only gaining columns) exist already.
        let keptTables = Set(plans.filter { $0.mode != .rebuild }.map { "CREATE TABLE \(generator.table($0.root)) (" })
        for statement in schema where statement.hasPrefix("CREATE TABLE ") && !keptTables.contains(where: statement.hasPrefix) {
            try c.execute(statement)
        }
        for (i, pairs) in pairSources.enumerated() {
            try c.execute("CREATE TABLE \(Self.pairsTable(i)) AS \(pairs.select(oldTable))")
            try c.execute("CREATE INDEX \(q("\(Self.oldPrefix)PAIRS_\(i)_src")) ON \(Self.pairsTable(i)) (src)")
        }

        var copied: Int64 = 0
        for plan in plans {
            let table = q(plan.root.name)
            switch plan.mode {
            case .unchanged:
                continue
            case .addColumns:
                Self.stepHook?("add \(plan.root.name)")
                let existing = Set(try c.texts(generator.migrationColumnsOfTable, [.text(plan.root.name)]))
                for (p, source) in plan.columns where !existing.contains(p.name) {
                    // A constant for every row of the table (see `plan()`): the column's default.
                    let type = (p as? AttributeDescription).map { generator.dialect.columnType($0.type) } ?? generator.dialect.keyType
                    let value = sql(source)
                    if let d = (p as? AttributeDescription)?.defaultValue, !generator.spellsAsLiteral(d) {
                        // SQLite's `ADD COLUMN` takes only a literal default: a value spelled as
                        // an expression (text with a NUL) is written into every row.
                        try c.execute("ALTER TABLE \(table) ADD COLUMN \(q(p.name)) \(type)")
                        try c.execute("UPDATE \(table) SET \(q(p.name)) = \(value)")
                        continue
                    }
                    let defaultClause = value == "NULL" ? "" : " DEFAULT \(value)"
                    try c.execute("ALTER TABLE \(table) ADD COLUMN \(q(p.name)) \(type)\(defaultClause)")
                }
            case .rebuild:
                guard let oldRoot = plan.oldRoot, !plan.numbers.isEmpty else { continue }
                Self.stepHook?("copy \(plan.root.name)")
                CoherenceLogging.log(.info, "migration", "Copying the rows of \(oldRoot) into \(plan.root.name) (\(store))")
                let entityCase =
                    "CASE o.Z_ENT " + plan.numbers.map { "WHEN \($0.old) THEN \($0.new)" }.joined(separator: " ") + " END"
                var names = ["Z_PK", "Z_ENT", "Z_OPT"] + plan.columns.map { q($0.property.name) }
                var values = ["o.Z_PK", entityCase, "o.Z_OPT"] + plan.columns.map { sql($0.source) }
                // The places of the destinations of ordered relationships (order columns beside
                // their foreign keys) go with the rows; a key whose old column had none is
                // numbered after the copy, in the order it was read before (by key).
                let hasOrder = plan.columns.contains { ($0.property as? RelationshipDescription)?.hasOrderColumn ?? false }
                let oldColumnNames =
                    hasOrder
                    ? Set(
                        try c.texts(
                            generator.migrationColumnsOfTable, [.text(renamed.contains(oldRoot) ? Self.oldPrefix + oldRoot : oldRoot)]))
                    : []
                var toNumber: [RelationshipDescription] = []
                for (p, source) in plan.columns {
                    guard let r = p as? RelationshipDescription, let order = generator.orderColumnName(r) else { continue }
                    names.append(q(order))
                    if case .column(let oldName) = source, oldColumnNames.contains(Self.orderColumnName(oldName)) {
                        values.append("o.\(q(Self.orderColumnName(oldName)))")
                    } else {
                        values.append("NULL")
                        toNumber.append(r)
                    }
                }
                let oldNumbers = plan.numbers.map { String($0.old) }.joined(separator: ", ")
                let before = copied
                // In runs of keys, so that progress moves as rows are copied (and a long copy
                // can be followed): each run ends at the key `chunkRows` rows further.
                let insert =
                    "INSERT INTO \(table) (\(names.joined(separator: ", "))) SELECT \(values.joined(separator: ", ")) FROM \(oldTable(oldRoot)) o WHERE o.Z_ENT IN (\(oldNumbers)) AND o.Z_PK > ? AND o.Z_PK <= ?"
                let nextEnd = "SELECT Z_PK FROM \(oldTable(oldRoot)) WHERE Z_PK > ? ORDER BY Z_PK LIMIT 1 OFFSET \(Self.chunkRows - 1)"
                var start = Int64.min
                while true {
                    let endRow = try c.rows(nextEnd, [.integer(start)]).first?.first
                    let end: Int64
                    if case .integer(let e) = endRow { end = e } else { end = Int64.max }
                    copied += Int64(try c.execute(insert, [.integer(start), .integer(end)]))
                    progress.completedUnitCount = copied
                    if let observe = Self.progressObserver.withLock({ $0 }) { observe(store, copied, progress.totalUnitCount) }
                    if end == Int64.max { break }
                    start = end
                }
                CoherenceLogging.log(.info, "migration", "Copied \(copied - before) rows into \(plan.root.name) (\(store))")
                for r in toNumber { if let numbering = generator.numberOrder(r) { try c.execute(numbering) } }
            }
        }

        // Join tables, from the pairs of the relationships they keep.
        var filled = Set<String>()
        for e in entities {
            for r in e.relationships where r.entity === e && !r.isTransient {
                guard case .joinTable(let name, let sourceIsFirst) = r.storage, filled.insert(name).inserted,
                    let (entity, rel, reversed) = oldRelationship(r),
                    let pairs = pairs(of: entity, rel, reversed: reversed)
                else { continue }
                guard let destination = r.destinationEntity else { continue }
                // Pairs whose rows are gone (an entity removed) are left out.
                let (first, second) = sourceIsFirst ? ("src", "dst") : ("dst", "src")
                try c.execute(
                    generator.insertSkippingDuplicates(
                        into: q(name), columns: "Z_1, Z_2",
                        select: """
                            SELECT \(first), \(second) FROM (\(pairs.select(oldTable))) AS p \
                            WHERE src IN (SELECT Z_PK FROM \(q(e.rootEntity.name))) AND dst IN (SELECT Z_PK FROM \(q(destination.rootEntity.name)))
                            """))
            }
        }

        try dropKeysOfRowsGone(on: c, plans: plans)
        try keepOneObjectPerDestination(on: c)
        try checkUniqueness(on: c)
        Self.stepHook?("indexes")
        var indexNames = Set<String>()
        for statement in schema where !statement.hasPrefix("CREATE TABLE ") {
            let sql = statement.replacingOccurrences(of: "CREATE INDEX ", with: "CREATE INDEX IF NOT EXISTS ")
                .replacingOccurrences(of: "CREATE UNIQUE INDEX ", with: "CREATE UNIQUE INDEX IF NOT EXISTS ")
            try c.execute(sql)
            if let name = Self.indexName(in: statement) { indexNames.insert(name) }
        }
        // Indexes the new model no longer has.
        let tables = Set(plans.map(\.root.name))
        for row in try c.rows(generator.migrationCreatedIndexes, []) {
            guard row.count == 2, case .text(let index) = row[0], case .text(let table) = row[1] else { continue }
            if tables.contains(table) && !indexNames.contains(index) { try c.execute("DROP INDEX \(q(index))") }
        }

        Self.stepHook?("drop")
        for i in pairSources.indices { try c.execute("DROP TABLE \(Self.pairsTable(i))") }
        for name in oldJoinTables.sorted() { try c.execute("DROP TABLE IF EXISTS \(q(Self.oldPrefix + name))") }
        for name in renamed.sorted() { try c.execute("DROP TABLE IF EXISTS \(q(Self.oldPrefix + name))") }

        try migrateHistory(on: c)

        // Primary-key counters, by the new numbers of the roots.
        try c.execute("DELETE FROM Z_PRIMARYKEY")
        for plan in plans {
            let stored = plan.oldRoot.flatMap { oldCounters[$0] } ?? 0
            let largest = try c.integer("SELECT coalesce(max(Z_PK), 0) FROM \(q(plan.root.name))")
            try c.execute(
                "INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_MAX) VALUES (?, ?, ?)",
                [.integer(Int64(plan.root.entityNumber)), .text(plan.root.name), .integer(max(stored, largest))])
        }
        progress.completedUnitCount = progress.totalUnitCount
        return Int(copied)
    }

    /// The quoted name of the index a `CREATE [UNIQUE] INDEX` statement makes.
    static func indexName(in statement: String) -> String? {
        guard let start = statement.firstIndex(of: "\""), let on = statement.range(of: "\" ON ") else { return nil }
        return String(statement[statement.index(after: start)..<on.lowerBound]).replacingOccurrences(of: "\"\"", with: "\"")
    }

    /// Sets to nil each to-one whose destination row is gone or is no longer of the destination
    /// entity: a removed sub-entity's rows are not copied, and an entity moved out of a hierarchy
    /// takes its rows to another table. Only relationships whose destination table was made
    /// again, or whose destination changed, are looked at.
    func dropKeysOfRowsGone(on c: any MigrationDatabase, plans: [TablePlan]) throws {
        let q = generator.dialect.quote
        for e in entities {
            for r in e.relationships where r.entity === e && !r.isTransient && !r.isToMany {
                guard case .foreignKey = r.storage, let destination = r.destinationEntity,
                    let (entity, rel, reversed) = oldRelationship(r)
                else { continue }
                let oldDestination = reversed ? entity : rel.destination
                let rebuilt = plans.contains { $0.root === destination.rootEntity && $0.mode == .rebuild }
                guard rebuilt || sources[destination.name]?.name != oldDestination else { continue }
                let table = q(e.rootEntity.name)
                let column = q(r.name)
                let numbers = destination.descendantNumbers.map(String.init).joined(separator: ", ")
                try c.execute(
                    """
                    UPDATE \(table) SET \(column) = NULL WHERE \(column) IS NOT NULL AND NOT EXISTS \
                    (SELECT 1 FROM \(q(destination.rootEntity.name)) d WHERE d.Z_PK = \(table).\(column) AND d.Z_ENT IN (\(numbers)))
                    """)
            }
        }
    }

    /// Whether an old relationship was one-to-one (a to-one whose inverse is a to-one).
    func wasOneToOne(_ r: StoredSchema.Relationship) -> Bool {
        guard !r.isToMany, let inverse = r.inverse else { return false }
        return old.allRelationships(of: r.destination).contains { $0.relationship.name == inverse && !$0.relationship.isToMany }
    }

    /// Makes each one-to-one relationship that was not one before hold at most one object per
    /// destination: of the rows whose key column points to the same object, the one with the
    /// smallest key keeps it (a to-many that becomes a to-one keeps its object with the smallest
    /// key), the others point nowhere.
    func keepOneObjectPerDestination(on c: any MigrationDatabase) throws {
        let q = generator.dialect.quote
        for e in entities {
            for r in e.relationships where r.entity === e && !r.isTransient && !r.isToMany {
                guard case .foreignKey = r.storage, let inverse = r.inverseRelationship, inverse !== r, !inverse.isToMany,
                    let (_, rel, _) = oldRelationship(r), !wasOneToOne(rel)
                else { continue }
                let table = q(e.rootEntity.name)
                let column = q(r.name)
                let numbers = e.descendantNumbers.map(String.init).joined(separator: ", ")
                try c.execute(
                    """
                    UPDATE \(table) SET \(column) = NULL WHERE \(column) IS NOT NULL AND Z_ENT IN (\(numbers)) AND Z_PK > \
                    (SELECT min(x.Z_PK) FROM \(table) x WHERE x.\(column) = \(table).\(column) AND x.Z_ENT IN (\(numbers)))
                    """)
            }
        }
    }

    /// Throws when rows violate a uniqueness constraint of the new model, naming the duplicates.

    func checkUniqueness(on c: any MigrationDatabase) throws {
        let q = generator.dialect.quote
        for e in entities {
            for constraint in e.uniquenessConstraints {
                let columns = constraint.compactMap { e.propertiesByName[$0] }.map { q($0.name) }
                guard columns.count == constraint.count else { continue }
                let numbers = e.descendantNumbers.map(String.init).joined(separator: ", ")
                let duplicates = try generator.duplicateGroups(in: q(e.rootEntity.name), columns: columns, numbers: numbers, on: c)
                if !duplicates.isEmpty {
                    throw CoherenceError(
                        .migrationUniquenessViolated,
                        "Existing rows of '\(e.name)' violate its uniqueness constraint [\(constraint.joined(separator: ", "))]: \(duplicates.joined(separator: "; ")).",
                        entity: e.name, property: constraint.first, store: store)
                }
            }
        }
    }
}
