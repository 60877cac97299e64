import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

extension ManagedObjectModel {
    package static func locateModel(named name: String, in bundle: Bundle) throws(ModelError) -> URL {
        for ext in ["xcdatamodeld", "xcdatamodel"] {
            if let url = bundle.url(forResource: name, withExtension: ext) { return url }
            if let resources = bundle.resourceURL {
                let candidate = resources.appendingPathComponent("\(name).\(ext)")
                if FileManager.default.fileExists(atPath: candidate.path) { return candidate }
            }
        }
        if bundle.url(forResource: name, withExtension: "momd") != nil || bundle.url(forResource: name, withExtension: "mom") != nil {
            throw ModelError(
                .modelNotFound,
                "Only a compiled model (\(name).momd) was found in \(bundle.bundlePath); Coherence reads the source model: ship \(name).xcdatamodeld as a resource."
            )
        }
        throw ModelError(
            .modelNotFound,
            "No model named '\(name)' (\(name).xcdatamodeld or \(name).xcdatamodel) in \(bundle.resourceURL?.path ?? bundle.bundlePath).")
    }

    /// The `contents` file of a model directory: of the version named `version` (with or
    /// without `.xcdatamodel`) of a versioned model, else of its current version.
    package static func contentsFile(of url: URL, version: String? = nil) throws(ModelError) -> URL {
        let fm = FileManager.default
        switch url.pathExtension {
        case "xcdatamodeld":
            if let version {
                let file = version.hasSuffix(".xcdatamodel") ? version : version + ".xcdatamodel"
                guard fm.fileExists(atPath: url.appendingPathComponent(file).path) else {
                    let names = versionNames(of: url).joined(separator: ", ")
                    throw ModelError(.modelNotFound, "\(url.path) has no version named '\(version)' (it has: \(names)).")
                }
                return try contentsFile(of: url.appendingPathComponent(file))
            }
            var current: String?
            let marker = url.appendingPathComponent(".xccurrentversion")
            if let data = try? Data(contentsOf: marker),
                let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
            {
                current = plist["_XCCurrentVersionName"] as? String
            }
            guard let name = current ?? versionNames(of: url).last else {
                throw ModelError(.modelNotFound, "\(url.path) contains no .xcdatamodel version.")
            }
            return try contentsFile(of: url.appendingPathComponent(name.hasSuffix(".xcdatamodel") ? name : name + ".xcdatamodel"))
        case "xcdatamodel":
            guard version == nil || version == url.deletingPathExtension().lastPathComponent else {
                throw ModelError(.modelNotFound, "\(url.path) is a single model version, not '\(version ?? "")'.")
            }
            let contents = url.appendingPathComponent("contents")
            guard fm.fileExists(atPath: contents.path) else {
                throw ModelError(.modelNotFound, "\(url.path) has no 'contents' file.")
            }
            return contents
        default:
            guard fm.fileExists(atPath: url.path) else { throw ModelError(.modelNotFound, "No model at \(url.path).") }
            return url
        }
    }

    /// The version names (without `.xcdatamodel`) of a `.xcdatamodeld` directory, in natural
    /// order ("Model", "Model 2", …, "Model 10").
    package static func versionNames(of url: URL) -> [String] {
        let items = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
        return items.filter { $0.hasSuffix(".xcdatamodel") }
            .map { String($0.dropLast(".xcdatamodel".count)) }
            .sorted { $0.localizedStandardCompare($1) == .orderedAscending }
    }
}

/// Parses the XML of an Xcode data model's `contents` file.
package final class XcodeModelParser: NSObject, XMLParserDelegate {
    package struct EntitySpec {
        package var name: String
        package var className: String?
        package var parent: String?
        package var isAbstract = false
        package var properties: [PropertyDescription] = []
        package var constraints: [[String]] = []
        package var indexes: [[String]] = []
        package var userInfo: [String: any Sendable] = [:]
        /// Xcode's "Renaming ID" (`elementID`).
        package var renamingIdentifier: String?
    }

    package struct Result {
        /// The model's "Core Data Model Version Identifier", if set.
        package var versionIdentifier: String?
        package var entities: [EntitySpec] = []
        package var configurations: [String: [String]] = [:]
    }

    private let file: String
    private var result = Result()
    private var entity: EntitySpec?
    private var pendingProperty: (attributes: [String: String], isRelationship: Bool, userInfo: [String: any Sendable])?
    private var constraint: [String]?
    private var index: [String]?
    private var configuration: String?
    private var userInfoTarget: UserInfoTarget = .none
    private var sawModel = false
    private(set) var error: ModelError?

    enum UserInfoTarget { case none, entity, property }

    init(file: String) { self.file = file }

    package static func parse(_ data: Data, file: String) throws(ModelError) -> Result {
        let delegate = XcodeModelParser(file: file)
        let parser = XMLParser(data: data)
        parser.delegate = delegate
        let ok = parser.parse()
        if let error = delegate.error { throw error }
        guard ok else {
            let line = parser.lineNumber
            throw ModelError(
                .modelParse,
                "\(file) is not a valid model file (XML error at line \(line): \(parser.parserError?.localizedDescription ?? "unknown")).")
        }
        guard delegate.sawModel else {
            throw ModelError(.modelParse, "\(file) has no <model> element.")
        }
        return delegate.result
    }

    private func fail(_ error: ModelError, _ parser: XMLParser) {
        if self.error == nil { self.error = error }
        parser.abortParsing()
    }

    package func parser(
        _ parser: XMLParser, didStartElement element: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        switch element {
        case "model":
            sawModel = true
            if let v = attributes["userDefinedModelVersionIdentifier"], !v.isEmpty { result.versionIdentifier = v }
        case "entity":
            guard let name = attributes["name"], !name.isEmpty else {
                fail(ModelError(.modelParse, "An <entity> without a name in \(file) (line \(parser.lineNumber))."), parser)
                return
            }
            entity = EntitySpec(
                name: name, className: attributes["representedClassName"], parent: attributes["parentEntity"],
                isAbstract: attributes["isAbstract"] == "YES", renamingIdentifier: attributes["elementID"])
            userInfoTarget = .entity
        case "attribute":
            pendingProperty = (attributes, false, [:])
            userInfoTarget = .property
        case "relationship":
            pendingProperty = (attributes, true, [:])
            userInfoTarget = .property
        case "uniquenessConstraint":
            constraint = []
        case "constraint":
            if let v = attributes["value"] { constraint?.append(v) }
        case "fetchIndex":
            index = []
        case "fetchIndexElement":
            if let p = attributes["property"] { index?.append(p) }
        case "configuration":
            configuration = attributes["name"]
            if let c = configuration { result.configurations[c] = result.configurations[c] ?? [] }
        case "memberEntity":
            if let c = configuration, let n = attributes["name"] { result.configurations[c, default: []].append(n) }
        case "entry":
            guard let key = attributes["key"] else { return }
            let value = attributes["value"] ?? ""
            switch userInfoTarget {
            case .property: pendingProperty?.userInfo[key] = value
            case .entity: entity?.userInfo[key] = value
            case .none: break
            }
        default:
            break
        }
    }

    package func parser(_ parser: XMLParser, didEndElement element: String, namespaceURI: String?, qualifiedName: String?) {
        switch element {
        case "entity":
            if let e = entity { result.entities.append(e) }
            entity = nil
            userInfoTarget = .none
        case "attribute", "relationship":
            if let p = pendingProperty, let entityName = entity?.name {
                do {
                    let property =
                        p.isRelationship
                        ? try Self.relationship(p.attributes, userInfo: p.userInfo, entity: entityName, file: file)
                        : try Self.attribute(p.attributes, userInfo: p.userInfo, entity: entityName, file: file)
                    entity?.properties.append(property)
                } catch let e as ModelError {
                    fail(e, parser)
                } catch {
                    fail(ModelError(.modelParse, entity: entityName, "\(error)"), parser)
                }
            }
            pendingProperty = nil
            userInfoTarget = entity == nil ? .none : .entity
        case "uniquenessConstraint":
            if let c = constraint, !c.isEmpty { entity?.constraints.append(c) }
            constraint = nil
        case "fetchIndex":
            if let i = index, !i.isEmpty { entity?.indexes.append(i) }
            index = nil
        case "configuration":
            configuration = nil
        default:
            break
        }
    }

    package func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
        if error == nil {
            error = ModelError(
                .modelParse,
                "\(file) is not a valid model file (XML error at line \(parser.lineNumber): \(parseError.localizedDescription)).")
        }
    }

    // MARK: Properties

    static func attribute(_ a: [String: String], userInfo: [String: any Sendable], entity: String, file: String) throws
        -> AttributeDescription
    {
        let name = a["name"] ?? ""
        let typeName = a["attributeType"] ?? "Undefined"
        let transient = a["transient"] == "YES"
        let type: AttributeType
        switch typeName {
        case "Integer 16": type = .integer16
        case "Integer 32": type = .integer32
        case "Integer 64": type = .integer64
        case "Decimal": type = .decimal
        case "Double": type = .double
        case "Float": type = .float
        case "String": type = .string
        case "Boolean": type = .boolean
        case "Date": type = .date
        case "Binary": type = .binaryData
        case "UUID": type = .uuid
        case "URI": type = .uri
        case "Transformable": type = .transformable
        case "Undefined" where transient: type = .transformable
        default:
            throw ModelError(
                .modelParse, entity: entity, property: name,
                "Attribute type '\(typeName)' of \(entity).\(name) is not supported (in \(file)).")
        }
        var defaultValue: StoredValue?
        if let text = a["defaultValueString"] {
            defaultValue = try storedDefault(text, type: type, entity: entity, property: name, file: file)
        } else if let interval = a["defaultDateTimeInterval"], let seconds = Double(interval) {
            defaultValue = Date(timeIntervalSinceReferenceDate: seconds).storedValue
        }
        var validation = AttributeValidation()
        let isText = type == .string || type == .binaryData
        if let min = a["minValueString"], let v = Double(min) {
            if isText { validation.minLength = Int(v) } else { validation.minimum = v }
        }
        if let max = a["maxValueString"], let v = Double(max) {
            if isText { validation.maxLength = Int(v) } else { validation.maximum = v }
        }
        if let min = a["minDateTimeInterval"], let v = Double(min) { validation.minimum = v }
        if let max = a["maxDateTimeInterval"], let v = Double(max) { validation.maximum = v }
        validation.regularExpression = a["regularExpressionString"]
        return AttributeDescription(
            name: name, type: type, isOptional: a["optional"] == "YES", storedDefault: defaultValue,
            isTransient: transient, validation: validation, valueTransformerName: a["valueTransformerName"],
            userInfo: userInfo, preservesValueInHistoryOnDeletion: a["preserveAfterDeletion"] == "YES",
            renamingIdentifier: a["elementID"])
    }

    static func storedDefault(_ text: String, type: AttributeType, entity: String, property: String, file: String) throws -> StoredValue {
        let value: StoredValue?
        switch type.kind {
        case .integer16, .integer32, .integer64: value = Int64(text).map { .integer($0) }
        case .double, .float: value = Double(text).map { $0.storedValue }
        case .boolean: value = text == "YES" || text == "1" || text == "true" ? .integer(1) : .integer(0)
        case .string: value = .text(text)
        case .decimal: value = DecimalText.parse(text).map { $0.storedValue }
        case .uuid: value = UUID(uuidString: text).map { $0.storedValue }
        case .uri: value = URL(string: text).map { $0.storedValue }
        case .date: value = Double(text).map { Date(timeIntervalSinceReferenceDate: $0).storedValue }
        case .binaryData, .transformable: value = nil
        }
        guard let value else {
            throw ModelError(
                .modelParse, entity: entity, property: property,
                "The default value '\(text)' of \(entity).\(property) is not a valid \(type) (in \(file)).")
        }
        return value
    }

    static func relationship(_ a: [String: String], userInfo: [String: any Sendable], entity: String, file: String) throws
        -> RelationshipDescription
    {
        let name = a["name"] ?? ""
        guard let destination = a["destinationEntity"] else {
            throw ModelError(.modelParse, entity: entity, property: name, "Relationship \(entity).\(name) has no destination (in \(file)).")
        }
        let rule: DeleteRule
        switch a["deletionRule"] ?? "Nullify" {
        case "Cascade": rule = .cascade
        case "Deny": rule = .deny
        case "No Action": rule = .noAction
        default: rule = .nullify
        }
        return RelationshipDescription(
            name: name, destination: destination, inverse: a["inverseName"],
            isToMany: a["toMany"] == "YES", isOrdered: a["ordered"] == "YES", deleteRule: rule,
            isOptional: a["optional"] == "YES", minCount: Int(a["minCount"] ?? "") ?? 0,
            maxCount: a["toMany"] == "YES" ? (Int(a["maxCount"] ?? "") ?? 0) : 0,
            isTransient: a["transient"] == "YES", userInfo: userInfo, renamingIdentifier: a["elementID"])
    }
}
