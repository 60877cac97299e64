import Foundation

extension ManagedObjectModel {
    /// Loads a model from typed ``ManagedObject`` subclasses (their typed superclasses are
    /// included automatically).
    ///
    /// ```swift
    /// let model = try ManagedObjectModel(types: [Person.self, Town.self])
    /// ```
    ///
    /// `versionIdentifier` names this version of the model (see
    /// ``ManagedObjectModel/versionIdentifier``).
    public convenience init(
        types: [ManagedObject.Type], configurations: [String: [String]] = [:], versionIdentifier: String? = nil
    ) throws(ModelError) {
        var seen = Set<ObjectIdentifier>()
        var entities: [EntityDescription] = []
        var queue = types
        while let t = queue.popLast() {
            guard seen.insert(ObjectIdentifier(t)).inserted else { continue }
            let e = try EntityDescription(reflecting: t)
            entities.append(e)
            if let sup = ModelReflection.typedSuperclass(of: t) { queue.append(sup) }
        }
        try self.init(entities: entities, configurations: configurations, versionIdentifier: versionIdentifier)
    }

    /// The entity for a typed class, if the class is used by exactly one entity.
    public func entity(for type: ManagedObject.Type) -> EntityDescription? {
        entitiesByClass[ObjectIdentifier(type)]
    }

    /// Loads the Xcode data model called `name` from a bundle's resources, the way Core Data
    /// users expect: `<name>.xcdatamodeld` (the version named `version`, else its current
    /// version, or the newest) or `<name>.xcdatamodel`.
    ///
    /// Entities use `ManagedObject` unless `classes` supplies a typed subclass for an entity
    /// (by entity name or by the model's class name). In a Swift package, ship the model with
    /// `resources: [.copy("HR.xcdatamodeld")]` and pass `Bundle.module`.
    ///
    /// ```swift
    /// let model = try ManagedObjectModel(named: "HR", in: .module, classes: [Person.self])
    /// let old = try ManagedObjectModel(named: "HR", in: .module, version: "HR 2")
    /// ```
    /// - Throws: ``ModelError`` `.modelNotFound` or `.modelParse`, naming the file and the problem.
    public convenience init(
        named name: String, in bundle: Bundle = .main, version: String? = nil, classes: [ManagedObject.Type] = []
    ) throws(ModelError) {
        let url = try Self.locateModel(named: name, in: bundle)
        try self.init(contentsOf: url, version: version, classes: classes)
    }

    /// Loads an Xcode data model from a `.xcdatamodeld` or `.xcdatamodel` directory (or a
    /// `contents` file): of a `.xcdatamodeld`, the version named `version` (with or without
    /// `.xcdatamodel`), else the current one. The model's ``ManagedObjectModel/versionIdentifier``
    /// is the version's "Core Data Model Version Identifier", else its name.
    public convenience init(contentsOf url: URL, version: String? = nil, classes: [ManagedObject.Type] = []) throws(ModelError) {
        let contents = try Self.contentsFile(of: url, version: version)
        let data: Data
        do { data = try Data(contentsOf: contents) } catch {
            throw ModelError(.modelNotFound, "Cannot read \(contents.path): \(error.localizedDescription)")
        }
        let parsed = try XcodeModelParser.parse(data, file: contents.path)
        var byName: [String: ManagedObject.Type] = [:]
        for c in classes {
            byName[c.entityName] = c
            byName[String(describing: c)] = c
        }
        let entities = parsed.entities.map { spec in
            EntityDescription(
                name: spec.name,
                managedObjectClass: byName[spec.name] ?? spec.className.flatMap { byName[$0] } ?? ManagedObject.self,
                isAbstract: spec.isAbstract, superentity: spec.parent, properties: spec.properties,
                uniquenessConstraints: spec.constraints, indexes: spec.indexes, userInfo: spec.userInfo,
                renamingIdentifier: spec.renamingIdentifier)
        }
        let versionDirectory = contents.deletingLastPathComponent()
        let versionName =
            versionDirectory.pathExtension == "xcdatamodel" ? versionDirectory.deletingPathExtension().lastPathComponent : nil
        do {
            try self.init(
                entities: entities, configurations: parsed.configurations, versionIdentifier: parsed.versionIdentifier ?? versionName)
        } catch {
            throw ModelError(error.code, entity: error.entityName, property: error.propertyName, "\(error.message) (in \(contents.path))")
        }
    }

    /// The version names of a `.xcdatamodeld` directory (without `.xcdatamodel`), in natural
    /// order (`["Model", "Model 2", "Model 3"]`); a single `.xcdatamodel` has one version.
    ///
    /// ```swift
    /// for name in ManagedObjectModel.versionNames(contentsOf: url) {
    ///     let model = try ManagedObjectModel(contentsOf: url, version: name)
    /// }
    /// ```
    public static func versionNames(contentsOf url: URL) -> [String] {
        if url.pathExtension == "xcdatamodel" { return [url.deletingPathExtension().lastPathComponent] }
        return versionNames(of: url)
    }
}
