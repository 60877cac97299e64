import Foundation

// How each `PredicateExpressions` node translates. Every conformance is unconditional, so a node
// whose children are not supported still casts to `QueryCompilable` and the error names the
// child rather than the whole tree.

// MARK: Leaves

extension PredicateExpressions.Variable: QueryCompilable {
    /// The object or value the variable is bound to.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        guard let bound = context.bindings[key] else {
            throw context.unsupported(Self.self, "the variable is not bound by the predicate, flatMap, contains(where:) or allSatisfy")
        }
        return bound
    }
}

extension PredicateExpressions.Value: QueryCompilable {
    /// A captured constant (converted when its use is known).
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        .constant(value as Any)
    }
}

extension PredicateExpressions.NilLiteral: QueryCompilable {
    /// `nil`.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        .value(.constant(.null))
    }
}

extension PredicateExpressions.KeyPath: QueryCompilable {
    /// A property of an object, `count` / `isEmpty` of a to-many relationship, `isEmpty` of a
    /// string, or any key path of a captured constant (evaluated now).
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        let base = try context.operand(root)
        let anyKeyPath = keyPath as AnyKeyPath
        switch base {
        case .constant(let value):
            guard let result = value[keyPath: anyKeyPath] else {
                throw context.unsupported(
                    Self.self,
                    "key path \(anyKeyPath) cannot be read on the constant of type \(PredicateCompiler.typeName(type(of: value)))")
            }
            return .constant(result)

        case .objectPath(let path, let entity):
            guard let property = entity.property(forKeyPath: anyKeyPath) else {
                throw context.unsupported(
                    Self.self, "key path \(anyKeyPath) is not an attribute or relationship of entity '\(entity.name)'")
            }
            if property.isTransient {
                throw context.unsupported(
                    Self.self, "'\(entity.name).\(property.name)' is transient: it is not stored, so it cannot be translated to SQL")
            }
            if let attribute = property as? AttributeDescription {
                guard KeyPathResolver.valueType(Output.self, fits: attribute),
                    KeyPathResolver.readsAttribute(anyKeyPath, attribute, entity: entity)
                else {
                    throw context.unsupported(
                        Self.self,
                        "key path \(anyKeyPath) reads attribute '\(entity.name).\(attribute.name)' but is not that attribute (computed properties cannot be translated to SQL)"
                    )
                }
                var result = path
                result.attribute = attribute
                return .value(.path(result))
            }
            guard let relationship = property as? RelationshipDescription,
                KeyPathResolver.valueType(Output.self, fits: relationship)
            else {
                throw context.unsupported(
                    Self.self,
                    "key path \(anyKeyPath) reads '\(entity.name).\(property.name)' but is not that property (computed properties cannot be translated to SQL)"
                )
            }
            guard let destination = relationship.destinationEntity else {
                throw context.unsupported(
                    Self.self, "relationship '\(entity.name).\(relationship.name)' has no destination entity (the model is not loaded)")
            }
            if relationship.isToMany {
                return .toMany(ToManyPath(base: path, relationship: relationship), destination)
            }
            var result = path
            result.relationships.append(relationship)
            return .objectPath(result, destination)

        case .toMany(let path, _):
            if let collection = Root.Output.self as? any ToManyCollectionKeyPaths.Type {
                if anyKeyPath == collection.countKeyPath { return .value(.count(path)) }
                if anyKeyPath == collection.isEmptyKeyPath {
                    return .value(.compare(.equal, .count(path), .constant(.integer(0))))
                }
            }
            throw context.unsupported(
                Self.self, "key path \(anyKeyPath) on the to-many relationship '\(path)' (only count and isEmpty are supported)")

        case .value(let e):
            if Root.Output.self == String.self {
                if anyKeyPath == \String.isEmpty { return .value(.compare(.equal, e, .constant(.text("")))) }
                if anyKeyPath == \String.count {
                    throw context.unsupported(
                        Self.self,
                        "String.count counts grapheme clusters, which SQL cannot; compare the string itself (for example with isEmpty) instead"
                    )
                }
            }
            throw context.unsupported(
                Self.self, "key path \(anyKeyPath) of \(PredicateCompiler.typeName(Root.Output.self)) values cannot be translated to SQL")

        case .range, .ordering:
            throw context.unsupported(Self.self, "key path \(anyKeyPath) cannot be read on this value")
        }
    }
}

// MARK: Comparisons

extension PredicateExpressions.Equal: QueryCompilable {
    /// `==`: null-safe; `x == nil` becomes `.isNull`.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        try PredicateCompiler.equality(lhs, rhs, negated: false, part: self, &context)
    }
}

extension PredicateExpressions.NotEqual: QueryCompilable {
    /// `!=`: null-safe; `x != nil` becomes `NOT .isNull`.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        try PredicateCompiler.equality(lhs, rhs, negated: true, part: self, &context)
    }
}

extension PredicateCompiler {
    static func equality(_ lhs: Any, _ rhs: Any, negated: Bool, part: Any, _ context: inout Context) throws(CoherenceError) -> Operand {
        let l = try context.operand(lhs), r = try context.operand(rhs)
        // caseInsensitiveCompare(…) == captured ComparisonResult
        switch (l, r) {
        case (.ordering(let a, let b), .constant(let c)), (.constant(let c), .ordering(let a, let b)):
            guard let result = c as? ComparisonResult else {
                throw context.unsupported(type(of: part), "caseInsensitiveCompare must be compared with a captured ComparisonResult")
            }
            let op: ComparisonOperator
            switch (result, negated) {
            case (.orderedSame, false): op = .equal
            case (.orderedSame, true): op = .notEqual
            case (.orderedAscending, false): op = .less
            case (.orderedAscending, true): op = .greaterOrEqual
            case (.orderedDescending, false): op = .greater
            case (.orderedDescending, true): op = .lessOrEqual
            }
            return .value(.compare(op, a, b))
        default:
            break
        }
        let a = try context.expression(l, of: lhs), b = try context.expression(r, of: rhs)
        let result: QueryExpression
        switch (isNil(a), isNil(b)) {
        case (true, true): result = .and([])
        case (false, true): result = .isNull(a)
        case (true, false): result = .isNull(b)
        case (false, false): return .value(.compare(negated ? .notEqual : .equal, a, b))
        }
        return .value(negated ? .not(result) : result)
    }
}

extension PredicateExpressions.Comparison: QueryCompilable {
    /// `<`, `<=`, `>`, `>=`.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        let op: ComparisonOperator
        switch self.op {
        case .lessThan: op = .less
        case .lessThanOrEqual: op = .lessOrEqual
        case .greaterThan: op = .greater
        case .greaterThanOrEqual: op = .greaterOrEqual
        }
        try PredicateCompiler.requireStoredOrder(LHS.Output.self, part: Self.self, context)
        let a = try context.value(lhs), b = try context.value(rhs)
        try PredicateCompiler.requireDecimalOperand(LHS.Output.self, [a, b], part: Self.self, context)
        return .value(.compare(op, a, b))
    }
}

// MARK: Logic

extension PredicateExpressions.Conjunction: QueryCompilable {
    /// `&&` (nested conjunctions are flattened).
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        var parts: [QueryExpression] = []
        for side in [try context.condition(lhs), try context.condition(rhs)] {
            if case .and(let xs) = side { parts += xs } else { parts.append(side) }
        }
        return .value(.and(parts))
    }
}

extension PredicateExpressions.Disjunction: QueryCompilable {
    /// `||` (nested disjunctions are flattened).
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        var parts: [QueryExpression] = []
        for side in [try context.condition(lhs), try context.condition(rhs)] {
            if case .or(let xs) = side { parts += xs } else { parts.append(side) }
        }
        return .value(.or(parts))
    }
}

extension PredicateExpressions.Negation: QueryCompilable {
    /// `!`.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        .value(.not(try context.condition(wrapped)))
    }
}

extension PredicateExpressions.Conditional: QueryCompilable {
    /// `test ? a : b`.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        .value(.conditional(try context.condition(test), try context.value(trueBranch), try context.value(falseBranch)))
    }
}

// MARK: Optionals

extension PredicateExpressions.OptionalFlatMap: QueryCompilable {
    /// `x?.y` / `x.flatMap { … }`: nil when `x` is nil.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        let base = try context.operand(wrapped)
        switch base {
        case .constant(let c):
            let unwrapped: Any?
            if let optional = c as? any AnyOptional { unwrapped = optional.unwrappedAny } else { unwrapped = c }
            guard let unwrapped else { return .value(.constant(.null)) }
            return try context.with(variable.key, boundTo: .constant(unwrapped)) {
                (c: inout PredicateCompiler.Context) throws(CoherenceError) in
                try c.operand(transform)
            }
        case .objectPath(let objectPath, _):
            let result = try context.with(variable.key, boundTo: base) { (c: inout PredicateCompiler.Context) throws(CoherenceError) in
                try c.operand(transform)
            }
            // Paths that continue from the object are nil whenever the object is.
            switch result {
            case .value(.path(let p)) where PredicateCompiler.extends(p, objectPath),
                .objectPath(let p, _) where PredicateCompiler.extends(p, objectPath):
                return result
            case .toMany(let p, _) where PredicateCompiler.extends(p.base, objectPath):
                return result
            default:
                let e = try context.expression(result, of: transform)
                return .value(.conditional(.isNull(.path(objectPath)), .constant(.null), e))
            }
        case .value(let e):
            let result = try context.with(variable.key, boundTo: base) { (c: inout PredicateCompiler.Context) throws(CoherenceError) in
                try c.value(transform)
            }
            return .value(.conditional(.isNull(e), .constant(.null), result))
        case .toMany, .range, .ordering:
            throw context.unsupported(Self.self, "its optional operand cannot be translated to SQL")
        }
    }
}

extension PredicateCompiler {
    /// Whether `path` starts at the object `prefix` (same scope, same leading relationships).
    static func extends(_ path: PropertyPath, _ prefix: PropertyPath) -> Bool {
        path.scope == prefix.scope && prefix.attribute == nil && path.relationships.count >= prefix.relationships.count
            && zip(path.relationships, prefix.relationships).allSatisfy { $0 === $1 }
    }
}

extension PredicateExpressions.ForcedUnwrap: QueryCompilable {
    /// `x!`: translated as `x` (a nil value makes comparisons unknown instead of trapping).
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        let base = try context.operand(inner)
        if case .constant(let c) = base, let optional = c as? any AnyOptional {
            return optional.unwrappedAny.map { .constant($0) } ?? .value(.constant(.null))
        }
        return base
    }
}

extension PredicateExpressions.NilCoalesce: QueryCompilable {
    /// `x ?? y`.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        .value(.coalesce(try context.value(lhs), try context.value(rhs)))
    }
}

// MARK: Arithmetic

extension PredicateCompiler {
    /// Throws for an ordering of `Decimal` values none of which is a decimal attribute's (a
    /// comparison of captured values, or of a `?:` that picks between them): such values reach
    /// SQL as their text, which does not order as numbers (`"10" < "9"`) nor puts NaN first.
    static func requireDecimalOperand(
        _ type: Any.Type, _ operands: [QueryExpression], part: Any.Type, _ context: Context
    ) throws(CoherenceError) {
        guard type == Decimal.self || type == Decimal?.self else { return }
        if !operands.contains(where: { QueryEvaluator.comparesAsDecimals($0) }) {
            throw context.unsupported(
                part,
                "ordering Decimal values none of which is a decimal attribute cannot be translated (they would compare as text); compare them in Swift before the fetch"
            )
        }
    }

    static func rejectDecimal(_ type: Any.Type, part: Any.Type, _ context: Context) throws(CoherenceError) {
        if type == Decimal.self {
            throw context.unsupported(part, "arithmetic on Decimal values cannot be translated exactly (decimals are stored as text)")
        }
    }

    /// Throws for arithmetic on `Float` values: SQL (and the evaluator) compute in `Double`,
    /// which rounds and overflows differently from Swift's `Float` arithmetic
    /// (`Float(0.1) + 0.2 == 0.3` is true in Swift, not in `Double`; `Float.greatestFiniteMagnitude * 2`
    /// is an infinity in Swift only).
    static func rejectFloat(_ type: Any.Type, part: Any.Type, _ context: Context) throws(CoherenceError) {
        if type == Float.self {
            throw context.unsupported(
                part,
                "arithmetic on Float values cannot be translated exactly (SQL computes in Double precision, which rounds and overflows differently); compare the attribute with a bound computed in Swift instead"
            )
        }
    }

    /// Throws unless Swift orders values of `type` as their stored form is ordered (see
    /// ``KeyPathResolver/ordersAsStored(_:)``): `<`, `<=`, `>`, `>=` and ranges of a type of
    /// the app's own (an enumeration stored by its raw value, say) follow its own `<`, which
    /// SQL cannot know.
    static func requireStoredOrder(_ type: Any.Type, part: Any.Type, _ context: Context) throws(CoherenceError) {
        if !KeyPathResolver.ordersAsStored(type) {
            throw context.unsupported(
                part,
                "ordering values of type \(typeName(type)) cannot be translated to SQL (its own < need not be the order of its stored values); compare with == or a list of values instead"
            )
        }
    }
}

extension PredicateExpressions.Arithmetic: QueryCompilable {
    /// `+`, `-`, `*`.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        try PredicateCompiler.rejectDecimal(Output.self, part: Self.self, context)
        try PredicateCompiler.rejectFloat(Output.self, part: Self.self, context)
        let op: ArithmeticOperator
        switch self.op {
        case .add: op = .add
        case .subtract: op = .subtract
        case .multiply: op = .multiply
        }
        return .value(.arithmetic(op, try context.value(lhs), try context.value(rhs)))
    }
}

extension PredicateExpressions.IntDivision: QueryCompilable {
    /// Integer `/` (truncating).
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        .value(.arithmetic(.divide, try context.value(lhs), try context.value(rhs)))
    }
}

extension PredicateExpressions.IntRemainder: QueryCompilable {
    /// Integer `%`.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        .value(.arithmetic(.remainder, try context.value(lhs), try context.value(rhs)))
    }
}

extension PredicateExpressions.FloatDivision: QueryCompilable {
    /// Floating-point `/` (not on `Float`: see ``PredicateCompiler/rejectFloat(_:part:_:)``).
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        try PredicateCompiler.rejectFloat(Output.self, part: Self.self, context)
        return .value(.arithmetic(.realDivide, try context.value(lhs), try context.value(rhs)))
    }
}

extension PredicateExpressions.UnaryMinus: QueryCompilable {
    /// Unary `-`.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        try PredicateCompiler.rejectDecimal(Output.self, part: Self.self, context)
        return .value(.negate(try context.value(wrapped)))
    }
}

// MARK: Strings

extension PredicateCompiler {
    static func requireString(_ type: Any.Type, part: Any.Type, _ what: String, _ context: Context) throws(CoherenceError) {
        if type != String.self && type != Substring.self {
            throw context.unsupported(part, "\(what) is only supported on strings, not on \(typeName(type))")
        }
    }
}

extension PredicateExpressions.CollectionContainsCollection: QueryCompilable {
    /// `string.contains(other)`: case-sensitive, by UTF-8 bytes.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        try PredicateCompiler.requireString(Base.Output.self, part: Self.self, "contains(_:) with a collection", context)
        return .value(.string(.contains, try context.value(base), try context.value(other)))
    }
}

extension PredicateExpressions.SequenceStartsWith: QueryCompilable {
    /// `string.starts(with: prefix)`: case-sensitive, by UTF-8 bytes.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        try PredicateCompiler.requireString(Base.Output.self, part: Self.self, "starts(with:)", context)
        return .value(.string(.beginsWith, try context.value(base), try context.value(prefix)))
    }
}

extension PredicateExpressions.StringLocalizedStandardContains: QueryCompilable {
    /// `string.localizedStandardContains(other)`: folded contains, false for an empty `other`
    /// (as Foundation's, which finds no empty string; `contains("")` is true).
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        let haystack = QueryExpression.fold(try context.value(root)), other = try context.value(other)
        if case .constant(.text(let t)) = other, !TextFolding.fold(t).isEmpty { return .value(.string(.contains, haystack, .fold(other))) }
        return .value(.and([.string(.contains, haystack, .fold(other)), .compare(.notEqual, .fold(other), .constant(.text("")))]))
    }
}

extension PredicateExpressions.StringCaseInsensitiveCompare: QueryCompilable {
    /// `string.caseInsensitiveCompare(other)`: resolved by the enclosing `==` / `!=`.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        .ordering(.fold(try context.value(root)), .fold(try context.value(other)))
    }
}

extension PredicateExpressions.StringContainsRegex: QueryCompilable {
    /// Always throws: regular expressions cannot be translated.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        throw context.unsupported(Self.self, "regular expressions cannot be translated to SQL")
    }
}

// MARK: Collections and ranges

extension PredicateExpressions.SequenceContains: QueryCompilable {
    /// `[a, b].contains(x)` → `.inList`; `$0.clubs.contains(club)` → `.anyMatch`.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        let seq = try context.operand(sequence)
        switch seq {
        case .constant(let c) where !(c is any PersistentValue):
            let list = try context.listExpressions(c, part: self)
            return .value(.inList(try context.value(element), list))
        case .toMany(let path, _):
            let target = try context.value(element)
            let scope = context.depth + 1
            return .value(.anyMatch(path, scope: scope, predicate: .compare(.equal, .path(PropertyPath(scope: scope)), target)))
        default:
            throw context.unsupported(
                Self.self,
                "contains(_:) is only supported on captured arrays or sets and on to-many relationships, not on \(PredicateCompiler.typeName(LHS.Output.self)) values"
            )
        }
    }
}

extension PredicateCompiler {
    /// `contains(where:)` (`any: true`) and `allSatisfy` over a to-many relationship or a
    /// captured sequence.
    static func quantified(
        _ sequence: Any, _ test: Any, _ variable: PredicateExpressions.VariableID, any: Bool,
        part: Any.Type, _ context: inout Context
    ) throws(CoherenceError) -> Operand {
        let seq = try context.operand(sequence)
        switch seq {
        case .toMany(let path, let destination):
            let scope = context.depth + 1
            context.depth = scope
            defer { context.depth = scope - 1 }
            let predicate = try context.with(variable, boundTo: .objectPath(PropertyPath(scope: scope), destination)) {
                (c: inout Context) throws(CoherenceError) in
                try c.condition(test)
            }
            return .value(any ? .anyMatch(path, scope: scope, predicate: predicate) : .allMatch(path, scope: scope, predicate: predicate))
        case .constant(let c) where !(c is any PersistentValue) && c is any Sequence:
            guard let elements = c as? any Sequence else { return .value(.constant(.null)) }
            var parts: [QueryExpression] = []
            for element in PredicateCompiler.elements(of: elements) {
                parts.append(
                    try context.with(variable, boundTo: .constant(element)) { (c: inout Context) throws(CoherenceError) in
                        try c.condition(test)
                    })
            }
            return .value(any ? .or(parts) : .and(parts))
        default:
            throw context.unsupported(
                part, "\(any ? "contains(where:)" : "allSatisfy") is only supported on to-many relationships and captured sequences")
        }
    }
}

extension PredicateExpressions.SequenceContainsWhere: QueryCompilable {
    /// `$0.clubs.contains { … }` → `.anyMatch`.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        try PredicateCompiler.quantified(sequence, test, variable.key, any: true, part: Self.self, &context)
    }
}

extension PredicateExpressions.SequenceAllSatisfy: QueryCompilable {
    /// `$0.clubs.allSatisfy { … }` → `.allMatch`.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        try PredicateCompiler.quantified(sequence, test, variable.key, any: false, part: Self.self, &context)
    }
}

extension PredicateExpressions.ClosedRange: QueryCompilable {
    /// `a...b`.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        .range(lower: try context.value(lower), upper: try context.value(upper), upperInclusive: true)
    }
}

extension PredicateExpressions.Range: QueryCompilable {
    /// `a..<b`.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        .range(lower: try context.value(lower), upper: try context.value(upper), upperInclusive: false)
    }
}

extension PredicateExpressions.RangeExpressionContains: QueryCompilable {
    /// `(a...b).contains(x)` → `.between`; captured partial ranges → comparisons.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        try PredicateCompiler.requireStoredOrder(Element.Output.self, part: Self.self, context)
        let r = try context.operand(range)
        let x = try context.value(element)
        switch r {
        case .range(let lower, let upper, let inclusive):
            try PredicateCompiler.requireDecimalOperand(Element.Output.self, [x, lower, upper], part: Self.self, context)
            return .value(.between(x, lower: lower, upper: upper, upperInclusive: inclusive))
        case .constant(let c):
            guard let captured = c as? any CapturedRange else { break }
            let lower = try captured.lowerAny.map { v throws(CoherenceError) in try context.constantExpression(v, part: self) }
            let upper = try captured.upperAny.map { v throws(CoherenceError) in try context.constantExpression(v, part: self) }
            try PredicateCompiler.requireDecimalOperand(Element.Output.self, [x], part: Self.self, context)
            switch (lower, upper) {
            case let (lo?, hi?): return .value(.between(x, lower: lo, upper: hi, upperInclusive: captured.upperInclusive))
            case let (lo?, nil): return .value(.compare(.greaterOrEqual, x, lo))
            case let (nil, hi?): return .value(.compare(captured.upperInclusive ? .lessOrEqual : .less, x, hi))
            case (nil, nil): return .value(.and([]))
            }
        default:
            break
        }
        throw context.unsupported(
            Self.self, "contains(_:) is only supported on ranges built in the predicate or captured Range / ClosedRange / partial ranges")
    }
}

// MARK: Explicitly unsupported

extension PredicateExpressions.TypeCheck: QueryCompilable {
    /// Always throws: entity checks are not part of the query language.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        throw context.unsupported(Self.self, "type checks (is) cannot be translated to SQL; fetch the sub-entity instead")
    }
}

extension PredicateExpressions.ConditionalCast: QueryCompilable {
    /// Always throws: casts are not part of the query language.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        throw context.unsupported(Self.self, "casts (as?) cannot be translated to SQL; fetch the sub-entity instead")
    }
}

extension PredicateExpressions.ForceCast: QueryCompilable {
    /// Always throws: casts are not part of the query language.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        throw context.unsupported(Self.self, "casts (as!) cannot be translated to SQL; fetch the sub-entity instead")
    }
}
