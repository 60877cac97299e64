import Foundation

/// Translates a ``QueryExpression`` to SQL for one statement: collects bound values (constants
/// are always parameters, so equal predicates share one cached statement) and the joins each
/// scope needs for to-one paths.
final class QueryBuilder {
    let generator: SQLGenerator
    let storeIdentifier: UUID
    private(set) var bindings: [StoredValue] = []
    private var scopes: [Scope] = []
    private var aliasCounter = 0

    final class Scope {
        let alias: String
        let entity: EntityDescription
        var joins: [String] = []
        var joinAliases: [String: String] = [:]
        init(alias: String, entity: EntityDescription) {
            self.alias = alias
            self.entity = entity
        }
    }

    init(generator: SQLGenerator, rootEntity: EntityDescription, storeIdentifier: UUID) {
        self.generator = generator
        self.storeIdentifier = storeIdentifier
        scopes = [Scope(alias: "t0", entity: rootEntity)]
    }

    /// The JOIN clauses collected for a scope.
    func joins(forScope scope: Int) -> String {
        guard scope < scopes.count else { return "" }
        return scopes[scope].joins.map { " " + $0 }.joined()
    }

    private func newAlias(_ prefix: String) -> String {
        aliasCounter += 1
        return "\(prefix)\(aliasCounter)"
    }

    private func scope(_ n: Int) throws(CoherenceError) -> Scope {
        guard n >= 0, n < scopes.count else {
            throw CoherenceError(.unsupportedPredicate, "Internal: predicate refers to unknown scope $\(n)")
        }
        return scopes[n]
    }

    private func bind(_ v: StoredValue) -> String {
        bindings.append(v)
        return "?"
    }

    // MARK: Paths

    /// The alias of the row at the end of `relationships` from `scope`, adding LEFT JOINs.
    private func alias(scope n: Int, relationships: ArraySlice<RelationshipDescription>) throws(CoherenceError) -> String {
        let s = try scope(n)
        var alias = s.alias
        var key = ""
        for r in relationships {
            key += "." + r.name
            if let existing = s.joinAliases[key] { alias = existing; continue }
            guard let dest = r.destinationEntity else {
                throw CoherenceError(.unsupportedPredicate, "Relationship '\(r.name)' has no destination", property: r.name)
            }
            let next = newAlias("j")
            switch r.storage {
            case .foreignKey:
                s.joins.append("LEFT JOIN \(generator.table(dest)) AS \(next) ON \(next).Z_PK = \(alias).\(generator.column(r))")
            case .inverseForeignKey:
                guard let inverse = r.inverseRelationship else {
                    throw CoherenceError(.unsupportedPredicate, "Relationship '\(r.name)' has no inverse to join on", property: r.name)
                }
                s.joins.append("LEFT JOIN \(generator.table(dest)) AS \(next) ON \(next).\(generator.column(inverse)) = \(alias).Z_PK")
            case .joinTable:
                throw CoherenceError(.unsupportedPredicate, "'\(r.name)' is to-many; use contains(where:) or count", property: r.name)
            }
            s.joinAliases[key] = next
            alias = next
        }
        return alias
    }

    private func pathSQL(_ p: PropertyPath) throws(CoherenceError) -> String {
        if let attribute = p.attribute {
            let a = try alias(scope: p.scope, relationships: p.relationships[...])
            return "\(a).\(generator.column(attribute))"
        }
        // An object reference: its primary key.
        guard let last = p.relationships.last else {
            return "\(try scope(p.scope).alias).Z_PK"
        }
        if last.hasForeignKey {
            let a = try alias(scope: p.scope, relationships: p.relationships.dropLast())
            return "\(a).\(generator.column(last))"
        }
        return "\(try alias(scope: p.scope, relationships: p.relationships[...])).Z_PK"
    }

    /// Whether a value is compared as a decimal: the same rule as the evaluator's (a decimal
    /// attribute, or `??` / `?:` choosing one). SQLite only carries a column's collation through
    /// a bare column reference, not through `coalesce(…)` or `CASE`, so the collation is always
    /// written out.
    private func isDecimal(_ e: QueryExpression) -> Bool {
        QueryEvaluator.isDecimal(e)
    }

    // MARK: Expressions

    /// SQL for an expression.
    func sql(_ e: QueryExpression) throws(CoherenceError) -> String {
        switch e {
        case .constant(let v):
            return bind(v)
        case .object(let id):
            guard let id, id.storeIdentifier == storeIdentifier else { return "NULL" }
            return bind(.integer(id.primaryKey))
        case .path(let p):
            return try pathSQL(p)
        case .compare(let op, let a, let b):
            let collate = isDecimal(a) || isDecimal(b) ? " COLLATE \(SQLFunctions.decimalCollation)" : ""
            let l = try sql(a), r = try sql(b)
            switch op {
            case .equal: return "(\(l) IS \(r)\(collate))"
            case .notEqual: return "(\(l) IS NOT \(r)\(collate))"
            case .less: return "(\(l) < \(r)\(collate))"
            case .lessOrEqual: return "(\(l) <= \(r)\(collate))"
            case .greater: return "(\(l) > \(r)\(collate))"
            case .greaterOrEqual: return "(\(l) >= \(r)\(collate))"
            }
        case .and(let xs):
            if xs.isEmpty { return "1" }
            var parts: [String] = []
            for x in xs { parts.append(try sql(x)) }
            return "(" + parts.joined(separator: " AND ") + ")"
        case .or(let xs):
            if xs.isEmpty { return "0" }
            var parts: [String] = []
            for x in xs { parts.append(try sql(x)) }
            return "(" + parts.joined(separator: " OR ") + ")"
        case .not(let x):
            return "(NOT \(try sql(x)))"
        case .isNull(let x):
            return "(\(try sql(x)) IS NULL)"
        case .arithmetic(let op, let a, let b):
            let l = try sql(a), r = try sql(b)
            switch op {
            case .add: return "(\(l) + \(r))"
            case .subtract: return "(\(l) - \(r))"
            case .multiply: return "(\(l) * \(r))"
            case .divide: return "(\(l) / \(r))"
            case .realDivide: return "(CAST(\(l) AS REAL) / \(r))"
            case .remainder: return "(\(l) % \(r))"
            }
        case .negate(let x):
            return "(- \(try sql(x)))"
        case .fold(let x):
            return "\(SQLFunctions.foldFunction)(\(try sql(x)))"
        case .string(let op, let a, let b):
            // Prefixes and suffixes are cut from the UTF-8 bytes (text cast to a blob): on text,
            // `length` and `substr` count characters and stop at the first NUL. `substr` of an
            // empty blob is NULL, so an empty operand is tested first. (`instr` compares bytes,
            // and a match of valid UTF-8 can only start at a character.) Parameters are bound in
            // the order they appear in the text, so each operand is translated where it appears.
            let l = try sql(a)
            switch op {
            case .contains:
                return "(instr(\(l), \(try sql(b))) > 0)"
            case .beginsWith:
                let r1 = try sql(b), l2 = try sql(a), r2 = try sql(b), r3 = try sql(b)
                return "(CASE WHEN \(l) = '' THEN \(r1) = '' ELSE substr(CAST(\(l2) AS BLOB), 1, length(CAST(\(r2) AS BLOB))) = CAST(\(r3) AS BLOB) END)"
            case .endsWith:
                let r1 = try sql(b), l2 = try sql(a), r2 = try sql(b), r3 = try sql(b), r4 = try sql(b), l3 = try sql(a)
                return "(CASE WHEN \(l) = '' THEN \(r1) = '' ELSE (substr(CAST(\(l2) AS BLOB), -length(CAST(\(r2) AS BLOB))) = CAST(\(r3) AS BLOB) OR (length(CAST(\(r4) AS BLOB)) = 0 AND \(l3) IS NOT NULL)) END)"
            }
        case .inList(let x, let values):
            if values.isEmpty { return "0" }
            let collate = isDecimal(x) ? " COLLATE \(SQLFunctions.decimalCollation)" : ""
            // Parameters are bound in the order they appear in the text, so the operand is only
            // translated where it is written (a list of nils alone only writes the IS NULL test).
            let nonNull = values.filter { v in
                if case .constant(.null) = v { return false }
                if case .object(nil) = v { return false }
                return true
            }
            let hasNull = nonNull.count < values.count
            var parts: [String] = []
            if !nonNull.isEmpty {
                let l = try sql(x)
                var items: [String] = []
                for v in nonNull { items.append(try sql(v)) }
                parts.append("coalesce(\(l)\(collate) IN (\(items.joined(separator: ", "))), 0)")
            }
            if hasNull { parts.append("(\(try sql(x)) IS NULL)") }
            return "(" + parts.joined(separator: " OR ") + ")"
        case .between(let x, let lower, let upper, let inclusive):
            let decimal = isDecimal(x) || isDecimal(lower) || isDecimal(upper)
            let collate = decimal ? " COLLATE \(SQLFunctions.decimalCollation)" : ""
            let l = try sql(x)
            if inclusive {
                return "(\(l) BETWEEN \(try sql(lower))\(collate) AND \(try sql(upper))\(collate))"
            }
            let lo = try sql(lower), l2 = try sql(x), hi = try sql(upper)
            return "(\(l) >= \(lo)\(collate) AND \(l2) < \(hi)\(collate))"
        case .coalesce(let a, let b):
            return "coalesce(\(try sql(a)), \(try sql(b)))"
        case .conditional(let c, let a, let b):
            return "(CASE WHEN \(try sql(c)) THEN \(try sql(a)) ELSE \(try sql(b)) END)"
        case .anyMatch(let path, let scopeNumber, let predicate):
            return "EXISTS (\(try subquery(path, scope: scopeNumber, select: "1", predicate: predicate, negate: false)))"
        case .allMatch(let path, let scopeNumber, let predicate):
            return "(NOT EXISTS (\(try subquery(path, scope: scopeNumber, select: "1", predicate: predicate, negate: true))))"
        case .count(let path):
            return "(\(try subquery(path, scope: nil, select: "count(*)", predicate: nil, negate: false)))"
        }
    }

    /// A correlated subquery over the destinations of a to-many relationship.
    private func subquery(_ path: ToManyPath, scope scopeNumber: Int?, select: String, predicate: QueryExpression?,
                          negate: Bool) throws(CoherenceError) -> String {
        let r = path.relationship
        guard let dest = r.destinationEntity else {
            throw CoherenceError(.unsupportedPredicate, "Relationship '\(r.name)' has no destination", property: r.name)
        }
        let owner = try pathSQL(path.base)   // the source object's key
        let alias = newAlias("s")
        let inner = Scope(alias: alias, entity: dest)
        if let scopeNumber {
            while scopes.count <= scopeNumber { scopes.append(inner) }
            scopes[scopeNumber] = inner
        }
        var from: String
        var conditions: [String] = []
        switch r.storage {
        case .inverseForeignKey:
            guard let inverse = r.inverseRelationship else {
                throw CoherenceError(.unsupportedPredicate, "Relationship '\(r.name)' has no inverse", property: r.name)
            }
            from = "\(generator.table(dest)) AS \(alias)"
            conditions.append("\(alias).\(generator.column(inverse)) = \(owner)")
        case .joinTable:
            guard let (jt, src, dst) = generator.joinTable(r) else {
                throw CoherenceError(.unsupportedPredicate, "Relationship '\(r.name)' has no join table", property: r.name)
            }
            let j = newAlias("m")
            from = "\(jt) AS \(j) JOIN \(generator.table(dest)) AS \(alias) ON \(alias).Z_PK = \(j).\(dst)"
            conditions.append("\(j).\(src) = \(owner)")
        case .foreignKey:
            throw CoherenceError(.unsupportedPredicate, "'\(r.name)' is a to-one relationship, not a collection", property: r.name)
        }
        if let restriction = generator.entityRestriction(dest, includesSubentities: true, alias: alias) {
            conditions.append(restriction)
        }
        if let predicate {
            let p = try sql(predicate)
            conditions.append(negate ? "NOT coalesce(\(p), 0)" : p)
        }
        from += inner.joins.map { " " + $0 }.joined()
        return "SELECT \(select) FROM \(from) WHERE \(conditions.joined(separator: " AND "))"
    }
}
