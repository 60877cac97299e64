import Foundation

/// The context an ``EntityAction`` works with: a private-queue background context made for the
/// action through the connect's strategy (so its saves propagate like any background save),
/// with the merge policy ``MergePolicy/mergeByPropertyObjectTrump``. It never saves by itself,
/// except in ``merge(objects:for:ignoreAttributes:subsetFilter:condition:)-([[String:Any]],_,_,_,_)``.
///
/// Use it as any context: inside `performAndWait` / `perform`.
public final class ActionContext: ManagedObjectContext, @unchecked Sendable {
    // @unchecked Sendable: as ManagedObjectContext; adds only immutable state.

    /// The connect's uniqueness attributes by entity name (the managed entities).
    let uniquenessAttributes: [String: [String]]

    package init(template: ManagedObjectContext, name: String, uniquenessAttributes: [String: [String]]) {
        self.uniquenessAttributes = uniquenessAttributes
        if let parent = template.parent {
            super.init(concurrencyType: .privateQueue, parent: parent, name: name)
        } else {
            super.init(concurrencyType: .privateQueue, coordinator: template.persistentStoreCoordinator, name: name)
        }
        hooks = template.hooks
        mergePolicy = .mergeByPropertyObjectTrump
    }
}

/// Which entities a connect manages, and by which attributes their objects are matched.
public enum ManagedEntities {
    /// The uniqueness attributes of an entity, or nil when it is not managed.
    ///
    /// An entity is managed when it is not abstract and has uniqueness attributes: from its
    /// `userInfo` key `uniquenessAttributes` (a comma-separated string, items trimmed, or an
    /// array), else inherited from its super-entity, else the shortest of its uniqueness
    /// constraints (the first on ties). If a named attribute does not exist on the entity or an
    /// ancestor, the entity is not managed.
    public static func uniquenessAttributes(of entity: EntityDescription) -> [String]? {
        guard !entity.isAbstract else { return nil }
        var names: [String]?
        var e: EntityDescription? = entity
        while let current = e, names == nil {
            names = declared(current)
            e = current.superentity
        }
        if names == nil {
            var constraints: [[String]] = []
            var c: EntityDescription? = entity
            while let current = c {
                constraints += current.uniquenessConstraints
                c = current.superentity
            }
            names =
                constraints.enumerated().min { a, b in
                    a.element.count < b.element.count || (a.element.count == b.element.count && a.offset < b.offset)
                }?.element
        }
        guard let names, !names.isEmpty, names.allSatisfy({ entity.attributesByName[$0] != nil }) else { return nil }
        return names
    }

    private static func declared(_ entity: EntityDescription) -> [String]? {
        let value = entity.userInfo["uniquenessAttributes"]
        let items: [String]
        if let text = value as? String {
            items = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        } else if let list = value as? [String] {
            items = list.map { $0.trimmingCharacters(in: .whitespaces) }
        } else {
            return nil
        }
        let names = items.filter { !$0.isEmpty }
        return names.isEmpty ? nil : names
    }

    /// Every managed entity of a model with its uniqueness attributes.
    public static func all(in model: ManagedObjectModel) -> [String: [String]] {
        var result: [String: [String]] = [:]
        for e in model.entities {
            if let names = uniquenessAttributes(of: e) { result[e.name] = names }
        }
        return result
    }
}
