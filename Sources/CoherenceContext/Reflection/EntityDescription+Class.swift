extension EntityDescription {
    /// The class instantiated for objects of this entity.
    public var managedObjectClass: ManagedObject.Type {
        guard let objectClass else { return ManagedObject.self }
        // The entity's slot plan knows its class (a class cast instead of a metatype cast, on
        // the path that makes every fetched object).
        if let plan = objectClassData as? SlotPlan { return plan.objectClass }
        return (objectClass as? ManagedObject.Type) ?? ManagedObject.self
    }

    /// Creates an entity description (`recordsValuesInHistory`: see
    /// ``EntityDescription/recordsValuesInHistory``; `renamingIdentifier`: its name in the
    /// previous model version, when renamed).
    ///
    /// ```swift
    /// let person = EntityDescription(
    ///     name: "Person",
    ///     properties: [AttributeDescription(name: "name", type: .string)])
    /// ```
    public convenience init(
        name: String, managedObjectClass: ManagedObject.Type = ManagedObject.self, isAbstract: Bool = false,
        superentity: String? = nil, properties: [PropertyDescription], uniquenessConstraints: [[String]] = [],
        indexes: [[String]] = [], userInfo: [String: any Sendable] = [:], recordsValuesInHistory: Bool = false,
        renamingIdentifier: String? = nil
    ) {
        self.init(
            name: name, objectClass: managedObjectClass == ManagedObject.self ? nil : managedObjectClass, isAbstract: isAbstract,
            superentity: superentity, properties: properties, uniquenessConstraints: uniquenessConstraints, indexes: indexes,
            userInfo: userInfo, recordsValuesInHistory: recordsValuesInHistory, renamingIdentifier: renamingIdentifier)
    }

    /// The property a key path of the typed class leads to (`\Person.name` → `name`), found by
    /// reading the key path once on a probe object that records which storage it touched.
    package func property(forKeyPath keyPath: AnyKeyPath) -> PropertyDescription? {
        let key = SendableKeyPath(keyPath)
        if let hit = resolvedKeyPaths.withLock({ $0[key] }) { return hit }
        guard let property = KeyPathProbe.resolve(keyPath, in: self) else { return nil }
        resolvedKeyPaths.withLock { $0[key] = property }
        return property
    }
}
