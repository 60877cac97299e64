import Foundation

extension ManagedObjectModel {
    /// Loads a model from typed ``ManagedObject`` subclasses (their typed superclasses are
    /// included automatically).
    ///
    /// ```swift
    /// let model = try ManagedObjectModel(types: [Person.self, Town.self])
    /// ```
    public convenience init(types: [ManagedObject.Type], configurations: [String: [String]] = [:]) throws(ModelError) {
        var seen = Set<ObjectIdentifier>()
        var entities: [EntityDescription] = []
        var queue = types
        while let t = queue.popLast() {
            guard seen.insert(ObjectIdentifier(t)).inserted else { continue }
            let e = try EntityDescription(reflecting: t)
            entities.append(e)
            if let sup = ModelReflection.typedSuperclass(of: t) { queue.append(sup) }
        }
        try self.init(entities: entities, configurations: configurations)
    }

    /// The entity for a typed class, if the class is used by exactly one entity.
    public func entity(for type: ManagedObject.Type) -> EntityDescription? {
        entitiesByClass[ObjectIdentifier(type)]
    }

    /// Loads the Xcode data model called `name` from a bundle's resources, the way Core Data
    /// users expect: `<name>.xcdatamodeld` (its current version, or the newest) or
    /// `<name>.xcdatamodel`.
    ///
    /// Entities use `ManagedObject` unless `classes` supplies a typed subclass for an entity
    /// (by entity name or by the model's class name). In a Swift package, ship the model with
    /// `resources: [.copy("HR.xcdatamodeld")]` and pass `Bundle.module`.
    ///
    /// ```swift
    /// let model = try ManagedObjectModel(named: "HR", in: .module, classes: [Person.self])
    /// ```
    /// - Throws: ``ModelError`` `.modelNotFound` or `.modelParse`, naming the file and the problem.
    public convenience init(named name: String, in bundle: Bundle = .main, classes: [ManagedObject.Type] = []) throws(ModelError) {
        let url = try Self.locateModel(named: name, in: bundle)
        try self.init(contentsOf: url, classes: classes)
    }

    /// Loads an Xcode data model from a `.xcdatamodeld` or `.xcdatamodel` directory (or a
    /// `contents` file).
    public convenience init(contentsOf url: URL, classes: [ManagedObject.Type] = []) throws(ModelError) {
        let contents = try Self.contentsFile(of: url)
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
                uniquenessConstraints: spec.constraints, indexes: spec.indexes, userInfo: spec.userInfo)
        }
        do {
            try self.init(entities: entities, configurations: parsed.configurations)
        } catch {
            throw ModelError(error.code, entity: error.entityName, property: error.propertyName, "\(error.message) (in \(contents.path))")
        }
    }
}
