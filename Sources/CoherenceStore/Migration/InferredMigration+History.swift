import Foundation

extension InferredMigration {
    /// The new name of each old entity (nil: removed), and of each of its stored properties
    /// (nil: removed), by old name.
    func renamings() -> (entities: [String: String?], properties: [String: [String: String?]]) {
        var entityNames: [String: String?] = [:]
        var propertyNames: [String: [String: String?]] = [:]
        for oldEntity in old.entities {
            let new = entities.first { sources[$0.name]?.name == oldEntity.name }
            entityNames[oldEntity.name] = .some(new?.name)
            var names: [String: String?] = [:]
            for a in old.allAttributes(of: oldEntity.name) {
                let kept = new?.properties.first { p in
                    guard let n = p as? AttributeDescription, !n.isTransient, let entity = new else { return false }
                    return oldAttribute(n, of: entity)?.name == a.name
                }
                names[a.name] = .some(kept?.name)
            }
            for (_, r) in old.allRelationships(of: oldEntity.name) {
                let kept = new?.properties.first { p in
                    guard let n = p as? RelationshipDescription, !n.isTransient else { return false }
                    return [n.renamingIdentifier, n.name].compactMap { $0 }.first { name in
                        old.allRelationships(of: oldEntity.name).contains { $0.relationship.name == name }
                    } == r.name
                }
                names[r.name] = .some(kept?.name)
            }
            propertyNames[oldEntity.name] = names
        }
        return (entityNames, propertyNames)
    }

    /// Brings the store's persistent history (when it records it) to the new names, inside the
    /// caller's transaction: the changes of a renamed entity or property name the new one, and
    /// the changes of a removed entity (and removed properties in updates and tombstones) are
    /// left out. Transactions, their numbers and tokens stay; the history reads with the new model.
    func migrateHistory(on c: any MigrationDatabase) throws {
        guard try c.integer(HistorySQL.tableExists(generator.dialect)) > 0 else { return }
        let (entityNames, propertyNames) = renamings()
        let affected = Set(
            old.entities.map(\.name).filter { name in
                entityNames[name] != .some(name) || propertyNames[name, default: [:]].contains { $0.value != .some($0.key) }
            })
        guard !affected.isEmpty else { return }
        let table = HistorySQL.transactionTable
        let numbers = try c.rows("SELECT Z_PK, Z_ENTITIES FROM \(table)", []).compactMap { row -> Int64? in
            guard row.count == 2, case .integer(let number) = row[0], case .text(let names) = row[1] else { return nil }
            return names.split(separator: "|").contains { affected.contains(String($0)) } ? number : nil
        }
        // Old names not recorded in the schema stay as they are.
        let entityName = { (name: String) -> String? in entityNames[name] ?? name }
        let propertyName = { (entity: String, property: String) -> String? in propertyNames[entity]?[property] ?? property }
        for number in numbers {
            let row = try c.rows("SELECT Z_CHANGES FROM \(table) WHERE Z_PK = ?", [.integer(number)]).first
            guard case .blob(let data)? = row?.first else { continue }
            let renamed = data.withUnsafeBytes { bytes in
                HistoryCoding.renamed(bytes, entityName: entityName, propertyName: propertyName)
            }
            // (A damaged row is left as it is: reading it reports it.)
            guard let renamed else { continue }
            try c.execute(
                "UPDATE \(table) SET Z_ENTITIES = ?, Z_CHANGECOUNT = ?, Z_CHANGES = ? WHERE Z_PK = ?",
                [
                    .text("|" + renamed.entities.joined(separator: "|") + "|"), .integer(Int64(renamed.changeCount)),
                    .blob(Data(renamed.bytes)), .integer(number)
                ])
        }
    }
}
