import Foundation

/// Translates `#Predicate`s and `SortDescriptor`s of typed ``ManagedObject`` subclasses into
/// ``QueryExpression`` / ``SortKey``, which the SQL generator and ``QueryEvaluator`` share.
///
/// What translates (`$0` is the fetched object):
///
/// | Swift | Query expression |
/// |---|---|
/// | `==`, `!=`, `<`, `<=`, `>`, `>=` | `.compare` (`x == nil` → `.isNull`) |
/// | `&&`, `\|\|`, `!`, `c ? a : b` | `.and`, `.or`, `.not`, `.conditional` |
/// | `$0.town?.name`, `$0.town!.name`, `x ?? y` | paths through to-one relationships, `.coalesce` |
/// | `+ - *`, `/` (integers / floating point), `%`, unary `-` (no `Float` or `Decimal` arithmetic) | `.arithmetic`, `.negate` |
/// | `s.contains(t)`, `s.starts(with: t)` | `.string(.contains / .beginsWith)` (case-sensitive) |
/// | `s.localizedStandardContains(t)` | `.string(.contains, .fold(s), .fold(t))` |
/// | `s.caseInsensitiveCompare(t) == same` (captured `ComparisonResult`) | folded `.compare` |
/// | `[1, 2].contains($0.age)`, `(30...40).contains($0.age)` | `.inList`, `.between` |
/// | `m != p`, `$0.town! == t` (objects bound in the predicate) | object comparisons |
/// | `$0.clubs.contains { … }`, `allSatisfy`, `.count`, `.isEmpty` | `.anyMatch`, `.allMatch`, `.count` |
///
/// Captured constants of any ``PersistentValue`` type become `.constant`, managed objects
/// `.object`, arrays and sets of them lists; key paths read on a captured value are read when
/// compiling. (`#Predicate` itself only accepts captured values that are `Codable` and
/// `Sendable`, so captured managed objects only reach the compiler through trees built by hand;
/// see ``compile(_:variable:entity:)``.) Anything else throws ``CoherenceError`` with code
/// `.unsupportedPredicate` naming the part that cannot be translated.
///
/// `hasPrefix` / `hasSuffix` are rejected by the macro: use `starts(with:)` for prefixes.
/// `x!` is translated as `x` (nil makes the comparison unknown rather than trapping).
package enum PredicateCompiler {
    /// Compiles a predicate over objects of `entity` (the predicate's variable is scope 0).
    /// - Throws: `.unsupportedPredicate` naming the first part that cannot be translated.
    package static func compile<T: ManagedObject>(_ predicate: Predicate<T>, entity: EntityDescription) throws(CoherenceError)
        -> QueryExpression
    {
        var context = Context(entity: entity)
        context.bindings[predicate.variable.key] = .objectPath(PropertyPath(scope: 0), entity)
        return try context.condition(predicate.expression)
    }

    /// Compiles an expression tree built by hand, in which `variable` is the fetched object.
    ///
    /// `#Predicate` only accepts captured values that are `Codable` and `Sendable`, which managed
    /// objects are not; trees built directly from `PredicateExpressions` may hold them
    /// (`PredicateExpressions.Value(town)` becomes `.object(town.objectID)`).
    package static func compile<T: ManagedObject>(
        _ expression: some PredicateExpression<Bool>, variable: PredicateExpressions.Variable<T>,
        entity: EntityDescription
    ) throws(CoherenceError) -> QueryExpression {
        var context = Context(entity: entity)
        context.bindings[variable.key] = .objectPath(PropertyPath(scope: 0), entity)
        return try context.condition(expression)
    }

    /// Compiles sort descriptors over objects of `entity`.
    ///
    /// Each descriptor's key path must lead to an attribute, directly or through to-one
    /// relationships (`\Person.town?.name`). `order` gives the direction; a `nil` or `.lexical`
    /// string comparator compares text by UTF-8 bytes, `.localizedStandard` / `.localized`
    /// (Apple platforms) compare it folded.
    /// - Throws: `.unsupportedPredicate` naming the descriptor that cannot be translated.
    package static func sortKeys<T: ManagedObject>(_ descriptors: [SortDescriptor<T>], entity: EntityDescription) throws(CoherenceError)
        -> [SortKey]
    {
        var keys: [SortKey] = []
        for descriptor in descriptors {
            guard let keyPath = descriptor.keyPath else {
                throw CoherenceError(
                    .unsupportedPredicate, "Unsupported sort descriptor \(descriptor): it has no key path.",
                    entity: entity.name)
            }
            let path = try sortPath(keyPath, entity: entity)
            guard KeyPathResolver.ordersAsStored(type(of: keyPath).valueType) else {
                throw CoherenceError(
                    .unsupportedPredicate,
                    "Unsupported sort descriptor on \(path): values of type \(typeName(type(of: keyPath).valueType)) are ordered by their own <, which need not be the order of their stored values and cannot be translated to SQL.",
                    entity: entity.name, property: path.attribute?.name)
            }
            let folded: Bool
            if let comparator = descriptor.stringComparator {
                let forward = String.StandardComparator(comparator, order: .forward)
                if forward == .lexical {
                    folded = false
                } else if isFoldingComparator(forward) {
                    folded = true
                } else {
                    throw CoherenceError(
                        .unsupportedPredicate,
                        "Unsupported sort descriptor on \(path): its string comparator \(comparator) cannot be translated to SQL (use .lexical\(foldingComparatorNames)).",
                        entity: entity.name, property: path.attribute?.name)
                }
            } else {
                folded = false
            }
            keys.append(SortKey(path: path, ascending: descriptor.order == .forward, folded: folded))
        }
        return keys
    }

    #if canImport(Darwin)
    private static func isFoldingComparator(_ c: String.StandardComparator) -> Bool {
        c == .localizedStandard || c == .localized
    }
    private static let foldingComparatorNames = ", .localizedStandard or .localized"
    #else
    private static func isFoldingComparator(_ c: String.StandardComparator) -> Bool { false }
    private static let foldingComparatorNames = ""
    #endif

    /// Resolves a sort key path to an attribute, following to-one relationships.
    static func sortPath(_ keyPath: AnyKeyPath, entity: EntityDescription) throws(CoherenceError) -> PropertyPath {
        let valueType = type(of: keyPath).valueType
        var relationships: [RelationshipDescription] = []
        var current = entity
        for _ in 0..<16 {
            let found =
                relationships.isEmpty
                ? entity.property(forKeyPath: keyPath)
                : KeyPathResolver.probe(keyPath, entity: entity, through: relationships)
            guard let property = found else {
                throw CoherenceError(
                    .unsupportedPredicate,
                    "Unsupported sort key path \(keyPath): it does not lead to an attribute of entity '\(current.name)'.",
                    entity: entity.name)
            }
            let described = (relationships.map(\.name) + [property.name]).joined(separator: ".")
            if property.isTransient {
                throw CoherenceError(
                    .unsupportedPredicate,
                    "Unsupported sort key path \(keyPath): '\(described)' is transient: it is not stored, so it cannot be translated to SQL.",
                    entity: entity.name, property: property.name)
            }
            if let attribute = property as? AttributeDescription {
                guard KeyPathResolver.valueType(valueType, fits: attribute),
                    KeyPathResolver.readsAttribute(keyPath, attribute, entity: entity, through: relationships)
                else {
                    throw CoherenceError(
                        .unsupportedPredicate,
                        "Unsupported sort key path \(keyPath): it reads '\(described)' but is not that attribute itself (computed properties and members of attribute values cannot be sorted on in SQL).",
                        entity: entity.name, property: property.name)
                }
                return PropertyPath(scope: 0, relationships: relationships, attribute: attribute)
            }
            guard let relationship = property as? RelationshipDescription, !relationship.isToMany,
                let destination = relationship.destinationEntity
            else {
                throw CoherenceError(
                    .unsupportedPredicate,
                    "Unsupported sort key path \(keyPath): '\(described)' is a to-many relationship; sort keys must be attributes reached through to-one relationships.",
                    entity: entity.name, property: property.name)
            }
            if valueType is any RelationshipValue.Type {
                throw CoherenceError(
                    .unsupportedPredicate,
                    "Unsupported sort key path \(keyPath): '\(described)' is a relationship; sort by one of its attributes instead.",
                    entity: entity.name, property: property.name)
            }
            relationships.append(relationship)
            current = destination
        }
        throw CoherenceError(.unsupportedPredicate, "Unsupported sort key path \(keyPath): too many relationships.", entity: entity.name)
    }

    // MARK: Compilation state

    /// A compiled part of a predicate: a value, or something only some parents accept.
    package enum Operand {
        /// A scalar value (including Booleans and object references produced by `??` / `?:`).
        case value(QueryExpression)
        /// An object reached from a scope through to-one relationships, of the given entity.
        case objectPath(PropertyPath, EntityDescription)
        /// A to-many relationship, whose destinations are objects of the given entity.
        case toMany(ToManyPath, EntityDescription)
        /// A Swift value known when the predicate is compiled (captured constants).
        case constant(Any)
        /// A range of values built in the predicate (`a...b`, `a..<b`).
        case range(lower: QueryExpression, upper: QueryExpression, upperInclusive: Bool)
        /// The result of `caseInsensitiveCompare`: the two folded operands, compared once the
        /// expected `ComparisonResult` is known.
        case ordering(QueryExpression, QueryExpression)
    }

    /// The state of one compilation: the entity, variable bindings and nesting depth.
    package struct Context {
        /// The fetched entity.
        package let entity: EntityDescription
        /// What each predicate variable stands for.
        var bindings: [PredicateExpressions.VariableID: Operand] = [:]
        /// The number of enclosing `contains(where:)` / `allSatisfy` scopes.
        var depth = 0
        /// The number of expressions being compiled, each inside the one before.
        var nesting = 0

        /// How deeply expressions may nest: compiling (and then translating and evaluating) a
        /// tree recurses once per level, so a deeper one — a chain of `&&` built in a loop, one
        /// level per predicate — would overflow the thread's stack. Written predicates and
        /// `joined(with:)` (which nests its operands as a balanced tree) stay far below.
        static let maximumNesting = 256

        init(entity: EntityDescription) { self.entity = entity }

        /// Compiles a child expression.
        package mutating func operand(_ child: Any) throws(CoherenceError) -> Operand {
            guard let compilable = child as? any QueryCompilable else {
                throw unsupported(type(of: child), "it cannot be translated to SQL")
            }
            nesting += 1
            defer { nesting -= 1 }
            guard nesting <= Self.maximumNesting else {
                throw unsupported(
                    type(of: child),
                    "the predicate nests expressions more than \(Self.maximumNesting) levels deep (combine many predicates with joined(with:), which nests them as a balanced tree, rather than with && or || in a loop)"
                )
            }
            return try compilable.compile(&self)
        }

        /// Compiles a child expression that must produce a value.
        package mutating func value(_ child: Any) throws(CoherenceError) -> QueryExpression {
            try expression(operand(child), of: child)
        }

        /// Compiles a child expression used as a condition.
        package mutating func condition(_ child: Any) throws(CoherenceError) -> QueryExpression {
            PredicateCompiler.condition(try value(child))
        }

        /// The expression of an operand; throws for operands that are not values.
        func expression(_ operand: Operand, of part: Any) throws(CoherenceError) -> QueryExpression {
            switch operand {
            case .value(let e): return e
            case .objectPath(let p, _): return .path(p)
            case .constant(let c): return try constantExpression(c, part: part)
            case .toMany(let p, _):
                throw unsupported(
                    type(of: part),
                    "the to-many relationship '\(p)' can only be used with contains(where:), allSatisfy, contains(_:), count and isEmpty")
            case .range:
                throw unsupported(type(of: part), "a range can only be used with contains(_:)")
            case .ordering:
                throw unsupported(
                    type(of: part), "the result of caseInsensitiveCompare can only be compared with == or != to a captured ComparisonResult"
                )
            }
        }

        /// The expression of a captured Swift value.
        func constantExpression(_ value: Any, part: Any) throws(CoherenceError) -> QueryExpression {
            if let optional = value as? any AnyOptional {
                guard let wrapped = optional.unwrappedAny else { return .constant(.null) }
                return try constantExpression(wrapped, part: part)
            }
            if let object = value as? ManagedObject { return .object(object.objectID) }
            if let persistent = value as? any PersistentValue { return .constant(persistent.storedValue) }
            throw unsupported(type(of: part), "a constant of type \(typeName(type(of: value))) is not a PersistentValue or ManagedObject")
        }

        /// The elements of a captured sequence, as expressions.
        func listExpressions(_ value: Any, part: Any) throws(CoherenceError) -> [QueryExpression] {
            guard let sequence = value as? any Sequence else {
                throw unsupported(type(of: part), "the constant of type \(typeName(type(of: value))) is not a sequence")
            }
            var result: [QueryExpression] = []
            for element in PredicateCompiler.elements(of: sequence) {
                result.append(try constantExpression(element, part: part))
            }
            return result
        }

        /// An `.unsupportedPredicate` error naming `part`.
        func unsupported(_ part: Any.Type, _ reason: String) -> CoherenceError {
            CoherenceError(
                .unsupportedPredicate, "Unsupported predicate expression \(typeName(part)): \(reason).",
                entity: entity.name)
        }

        /// Compiles `body` with `variable` bound to `operand`.
        mutating func with<R>(
            _ variable: PredicateExpressions.VariableID, boundTo operand: Operand,
            _ body: (inout Context) throws(CoherenceError) -> R
        ) throws(CoherenceError) -> R {
            let saved = bindings[variable]
            bindings[variable] = operand
            defer { bindings[variable] = saved }
            return try body(&self)
        }
    }

    /// `e` as a condition: Boolean expressions as they are, Boolean values compared with true.
    static func condition(_ e: QueryExpression) -> QueryExpression {
        switch e {
        case .compare, .and, .or, .not, .isNull, .string, .inList, .between, .anyMatch, .allMatch:
            return e
        case .constant(.integer(let v)):
            return v != 0 ? .and([]) : .or([])
        default:
            return .compare(.equal, e, .constant(.integer(1)))
        }
    }

    /// Whether an expression is the constant nil.
    static func isNil(_ e: QueryExpression) -> Bool {
        switch e {
        case .constant(.null), .object(nil): return true
        default: return false
        }
    }

    static func elements<S: Sequence>(of sequence: S) -> [Any] { sequence.map { $0 as Any } }

    /// A readable name for a type: `PredicateExpressions.Equal<…>` without module prefixes.
    static func typeName(_ type: Any.Type) -> String {
        var name = String(reflecting: type)
        for prefix in ["FoundationEssentials.", "Foundation.", "Swift."] {
            name = name.replacingOccurrences(of: prefix, with: "")
        }
        return name
    }
}

/// A `#Predicate` expression that Coherence can translate. Each supported
/// `PredicateExpressions` type conforms unconditionally, so a tree is walked node by node and an
/// error names the exact node that is not supported.
package protocol QueryCompilable {
    /// Translates this expression.
    func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand
}

/// Lets an `Any` holding an `Optional` be unwrapped.
protocol AnyOptional {
    /// The wrapped value, or nil.
    var unwrappedAny: Any? { get }
}

extension Optional: AnyOptional {
    var unwrappedAny: Any? {
        switch self {
        case .some(let w): return w
        case .none: return nil
        }
    }
}

/// The `count` / `isEmpty` key paths of the collections that hold to-many relationships.
protocol ToManyCollectionKeyPaths {
    static var countKeyPath: AnyKeyPath { get }
    static var isEmptyKeyPath: AnyKeyPath { get }
}

extension Set: ToManyCollectionKeyPaths {
    static var countKeyPath: AnyKeyPath { \Set<Element>.count }
    static var isEmptyKeyPath: AnyKeyPath { \Set<Element>.isEmpty }
}

extension Array: ToManyCollectionKeyPaths {
    static var countKeyPath: AnyKeyPath { \Array<Element>.count }
    static var isEmptyKeyPath: AnyKeyPath { \Array<Element>.isEmpty }
}

/// Bounds of captured ranges (`let r = 30...40` used as `r.contains($0.age)`).
protocol CapturedRange {
    /// Lower bound, or nil when unbounded.
    var lowerAny: Any? { get }
    /// Upper bound, or nil when unbounded.
    var upperAny: Any? { get }
    /// Whether the upper bound is included.
    var upperInclusive: Bool { get }
}

extension Range: CapturedRange {
    var lowerAny: Any? { lowerBound }
    var upperAny: Any? { upperBound }
    var upperInclusive: Bool { false }
}
extension ClosedRange: CapturedRange {
    var lowerAny: Any? { lowerBound }
    var upperAny: Any? { upperBound }
    var upperInclusive: Bool { true }
}
extension PartialRangeFrom: CapturedRange {
    var lowerAny: Any? { lowerBound }
    var upperAny: Any? { nil }
    var upperInclusive: Bool { true }
}
extension PartialRangeThrough: CapturedRange {
    var lowerAny: Any? { nil }
    var upperAny: Any? { upperBound }
    var upperInclusive: Bool { true }
}
extension PartialRangeUpTo: CapturedRange {
    var lowerAny: Any? { nil }
    var upperAny: Any? { upperBound }
    var upperInclusive: Bool { false }
}

// MARK: Key paths of typed subclasses

/// Checks and follows key paths of typed ``ManagedObject`` subclasses.
enum KeyPathResolver {
    /// Whether a key path's value type is the Swift type of `attribute` (optional or not).
    static func valueType(_ type: Any.Type, fits attribute: AttributeDescription) -> Bool {
        if attribute.type == .transformable { return true }
        guard let persistent = type as? any PersistentValue.Type else { return false }
        return persistent.attributeType == attribute.type
    }

    /// Whether a key path's value type holds `relationship` (to-one or to-many as declared).
    static func valueType(_ type: Any.Type, fits relationship: RelationshipDescription) -> Bool {
        guard let value = type as? any RelationshipValue.Type else { return false }
        return value.isToMany == relationship.isToMany
    }

    /// Whether reading `keyPath` on an object returns exactly the value stored in `attribute`
    /// (and not, say, a computed property derived from it). Checked for the built-in value
    /// types by storing marker values — the type's zero or empty value, a negative number, text
    /// with spaces and capitals, nil for an optional attribute — and reading each back
    /// (`age == 0 ? 18 : age` fails at zero, `max(age, 0)` at a negative age,
    /// `name.lowercased()` at capitals, `email ?? ""` at nil).
    /// A key path through to-one `relationships` (a sort descriptor's `\Person.town?.name`) is
    /// read on a chain of objects, with the markers at its end.
    static func readsAttribute(
        _ keyPath: AnyKeyPath, _ attribute: AttributeDescription, entity: EntityDescription,
        through relationships: [RelationshipDescription] = []
    ) -> Bool {
        let valueType = type(of: keyPath).valueType
        guard builtinTypes.contains(ObjectIdentifier(valueType)), var markers = markers(for: attribute.type), attribute.slot >= 0
        else { return true }
        if attribute.isOptional { markers.append(.null) }
        guard let (root, object) = chain(from: entity, through: relationships) else { return true }
        guard object.entity.properties.count > attribute.slot, object._state.values.count > attribute.slot else { return true }
        for marker in markers {
            object._setStoredValue(marker, at: attribute.slot)
            guard let read = root[keyPath: keyPath], let value = read as? any PersistentValue, value.storedValue == marker else {
                return false
            }
        }
        return true
    }

    /// Whether Swift orders values of `type` (optional or not) as the store orders their stored
    /// form: the built-in attribute types that are `Comparable` (and `Bool`, false before true).
    /// A type of the app's own — an enumeration stored by its raw value, a transformable value —
    /// may define `<` otherwise (declaration order rather than raw-value order, say).
    static func ordersAsStored(_ type: Any.Type) -> Bool {
        orderedTypes.contains(ObjectIdentifier(type))
    }

    /// The built-in attribute types but `Data` and `URL`, which are not `Comparable`.
    private static let orderedTypes: Set<ObjectIdentifier> = builtinTypes.subtracting(
        [Data.self, URL.self, Data?.self, URL?.self].map { ObjectIdentifier($0) })

    private static let builtinTypes: Set<ObjectIdentifier> = {
        let types: [Any.Type] = [
            Int.self, Int16.self, Int32.self, Int64.self, Double.self, Float.self, Bool.self, String.self,
            Data.self, Date.self, UUID.self, URL.self, Decimal.self,
            Int?.self, Int16?.self, Int32?.self, Int64?.self, Double?.self, Float?.self, Bool?.self, String?.self,
            Data?.self, Date?.self, UUID?.self, URL?.self, Decimal?.self
        ]
        return Set(types.map { ObjectIdentifier($0) })
    }()

    private static func markers(for type: AttributeType) -> [StoredValue]? {
        switch type.kind {
        case .integer16, .integer32, .integer64: return [.integer(12_345), .integer(0), .integer(-7)]
        case .boolean: return [.integer(1), .integer(0)]
        case .double, .float, .date: return [.real(1234.5), .real(0), .real(-0.5)]
        case .string: return [.text("\u{1}coherence-probe"), .text(""), .text(" Coherence Probe\u{1} ")]
        case .uri: return [.text("coherence-probe:marker"), .text("coherence-probe:other")]
        case .decimal: return [.text("12345.5"), .text("0"), .text("-0.5")]
        case .binaryData: return [.blob(Data([0xC0, 0x4E, 0x01])), .blob(Data())]
        case .uuid: return [.blob(Data(repeating: 0xAB, count: 16)), .blob(Data(repeating: 0, count: 16))]
        case .transformable: return nil
        }
    }

    /// A new object of `entity` (`root`) and the objects reached from it through `relationships`
    /// (all to-one), each made and set as the one before's destination; `end` is the last (the
    /// root without relationships). Nil when a relationship has no destination entity or slot.
    static func chain(
        from entity: EntityDescription, through relationships: [RelationshipDescription]
    ) -> (root: ManagedObject, end: ManagedObject)? {
        let root = entity.managedObjectClass.init(entity: entity)
        var object = root
        for relationship in relationships {
            guard let destination = relationship.destinationEntity, relationship.slot >= 0 else { return nil }
            let next = destination.managedObjectClass.init(entity: destination)
            object._setRelatedObjects([next], at: relationship.slot)
            object = next
        }
        return (root, object)
    }

    /// The property a key path reads on the object reached from an object of `entity` through
    /// `relationships` (all to-one): builds that chain of objects, with a probe at its end.
    static func probe(_ keyPath: AnyKeyPath, entity: EntityDescription, through relationships: [RelationshipDescription])
        -> PropertyDescription?
    {
        guard let (root, object) = chain(from: entity, through: relationships) else { return nil }
        let recorder = KeyPathProbe.Recorder()
        object._becomeProbe(recorder)
        _ = root[keyPath: keyPath]
        guard let slot = recorder.onlySlot, slot >= 0, slot < object.entity.properties.count else { return nil }
        return object.entity.properties[slot]
    }
}
