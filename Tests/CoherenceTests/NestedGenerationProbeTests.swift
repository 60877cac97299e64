import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// Pinned contexts, their children and history under concurrent changes: what saves reach,
/// what history records.
@Suite struct NestedGenerationProbeTests {
    typealias Policy = NestedHistoryGenerationTests.Policy

    /// A pinned context deletes Lyon (cascade to its people) while another context added Dee
    /// to Lyon after the snapshot: under `.error` a conflict, nothing written; under a policy
    /// that keeps the delete, its cascade reaches Dee too (no row keeps Lyon's key).
    @Test(arguments: PostgreSQLTestServer.storeTypes, [Policy.error, .storeTrump, .objectTrump, .overwrite])
    func pinnedCascadeDeleteReachesAPersonAddedAfterTheSnapshot(_ type: StoreType, _ p: Policy) throws {
        let f = try QueryGenerationTests.Fixture(type)
        let view = try f.pinnedContext("view")
        view.mergePolicy = p.policy
        try view.performAndWait {
            let lyon = try #require(view.existingObject(with: f.town) as? Town)
            #expect(lyon.people.count == 3)
        }
        let other = f.context("other")
        try other.performAndWait {
            let lyon = try #require(other.existingObject(with: f.town) as? Town)
            let dee = Person(context: other)
            dee.name = "Dee"
            dee.town = lyon
            try other.save()
        }
        let result: Result<Void, any Error> = view.performAndWait {
            Result {
                let lyon = try #require(view.existingObject(with: f.town) as? Town)
                view.delete(lyon)
                try view.save()
            }
        }
        let check = f.context("check")
        try check.performAndWait {
            let people = try check.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\Person.name)]))
            let towns = try check.fetch(FetchRequest<Town>())
            let desc = people.map { "\($0.name):\($0.town?.name ?? "-")" }
            switch p {
            case .error:
                #expect(throws: CoherenceError.self) { try result.get() }
                #expect(desc == ["Ada:Lyon", "Bob:Lyon", "Cy:Lyon", "Dee:Lyon"])
            default:
                #expect(throws: Never.self) { try result.get() }
                #expect(towns.isEmpty)
                #expect(desc == [], "\(desc)")
            }
        }
    }

    /// The same through a child of the pinned context.
    @Test(arguments: [StoreType.sqlite], [Policy.error, .storeTrump, .objectTrump, .overwrite])
    func childOfPinnedCascadeDelete(_ type: StoreType, _ p: Policy) throws {
        let f = try QueryGenerationTests.Fixture(type)
        let view = try f.pinnedContext("view")
        view.mergePolicy = p.policy
        let other = f.context("other")
        try other.performAndWait {
            let lyon = try #require(other.existingObject(with: f.town) as? Town)
            let dee = Person(context: other)
            dee.name = "Dee"
            dee.town = lyon
            try other.save()
        }
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: view, name: "child")
        try child.performAndWait {
            let lyon = try #require(child.existingObject(with: f.town) as? Town)
            #expect(lyon.people.count == 3)
            child.delete(lyon)
            try child.save()
        }
        let result: Result<Void, any Error> = view.performAndWait { Result { try view.save() } }
        let check = f.context("check")
        try check.performAndWait {
            let people = try check.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\Person.name)]))
            let desc = people.map { "\($0.name):\($0.town?.name ?? "-")" }
            switch p {
            case .error:
                #expect(throws: CoherenceError.self) { try result.get() }
                #expect(desc == ["Ada:Lyon", "Bob:Lyon", "Cy:Lyon", "Dee:Lyon"])
            default:
                #expect(throws: Never.self) { try result.get() }
                #expect(desc == [], "\(desc)")
            }
        }
    }

    /// Batch inserts, updates and deletes of extreme values: history gives back exactly what
    /// was stored.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func batchHistoryOfExtremeValues(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [HNote.self, HFolder.self, HTag.self, HXValue.self])
        let c = try makeHistoryCoordinator(type, in: dir, model: model)
        let nul = type != .postgreSQL
        let s1 = nul ? "a\u{0}b" : "ab"
        let dec = try #require(Decimal(string: "-12345678901234567890.123456789"))
        let date = Date(timeIntervalSinceReferenceDate: -63_000_000_000)
        _ = try c.execute(
            BatchInsertRequest<HXValue>(objects: [
                ["code": "x", "d": -0.0, "f": Float.nan, "i": Int64.min, "s": s1, "dec": dec, "date": date, "data": Data([0, 0])]
            ]))
        _ = try c.execute(
            BatchUpdateRequest<HXValue>(
                predicate: #Predicate { $0.code == "x" },
                propertiesToUpdate: [
                    "d": Double.nan, "f": -Float(0), "i": Int64.max, "s": "", "dec": Decimal.nan, "date": Date.distantFuture
                ]))
        _ = try c.execute(
            BatchUpdateRequest<HXValue>(
                predicate: #Predicate { $0.code == "x" },
                propertiesToUpdate: ["d": Double.infinity, "f": Float.infinity, "i": Int64(-1), "s": nul ? "\u{0}" : "z"]))
        _ = try c.execute(BatchDeleteRequest(fetchRequest: FetchRequest<HXValue>()))
        let history = try allHistory(c)
        try #require(history.count == 4)
        let u1 = try #require(history[1].changes?.first)
        #expect(u1.oldValue(forKey: "d", as: Double.self)?.bitPattern == (-0.0).bitPattern, "\(u1.oldValues ?? [:])")
        #expect(u1.oldValue(forKey: "f", as: Float.self)?.isNaN == true, "\(u1.oldValues ?? [:])")
        #expect(u1.oldValue(forKey: "i", as: Int64.self) == .min)
        #expect(u1.oldValue(forKey: "s", as: String.self) == s1)
        #expect(u1.oldValue(forKey: "dec", as: Decimal.self) == dec)
        #expect(u1.oldValue(forKey: "date", as: Date.self) == date)
        #expect(u1.newValue(forKey: "d", as: Double.self)?.isNaN == true, "\(u1.newValues ?? [:])")
        #expect(u1.newValue(forKey: "f", as: Float.self)?.bitPattern == (-Float(0)).bitPattern, "\(u1.newValues ?? [:])")
        #expect(u1.newValue(forKey: "i", as: Int64.self) == .max)
        #expect(u1.newValue(forKey: "dec", as: Decimal.self)?.isNaN == true, "\(u1.newValues ?? [:])")
        #expect(u1.newValue(forKey: "date", as: Date.self) == Date.distantFuture)
        let u2 = try #require(history[2].changes?.first)
        #expect(u2.oldValue(forKey: "d", as: Double.self)?.isNaN == true, "\(u2.oldValues ?? [:])")
        #expect(u2.oldValue(forKey: "f", as: Float.self)?.bitPattern == (-Float(0)).bitPattern, "\(u2.oldValues ?? [:])")
        #expect(u2.oldValue(forKey: "s", as: String.self) == "")
        #expect(u2.newValue(forKey: "s", as: String.self) == (nul ? "\u{0}" : "z"))
        let del = try #require(history[3].changes?.first)
        #expect(del.tombstoneValue(forKey: "d", as: Double.self) == .infinity, "\(del.tombstone ?? [:])")
        #expect(del.tombstoneValue(forKey: "f", as: Float.self) == .infinity)
        #expect(del.tombstoneValue(forKey: "i", as: Int64.self) == -1)
        #expect(del.tombstoneValue(forKey: "s", as: String.self) == (nul ? "\u{0}" : "z"))
        #expect(del.tombstoneValue(forKey: "dec", as: Decimal.self)?.isNaN == true, "\(del.tombstone ?? [:])")
        #expect(del.tombstoneValue(forKey: "date", as: Date.self) == Date.distantFuture)
        #expect(del.tombstoneValue(forKey: "data", as: Data.self) == Data([0, 0]))
    }
}

extension NestedGenerationProbeTests {
    static func saveNice(_ f: QueryGenerationTests.Fixture) throws -> ObjectID {
        let w = f.context("w")
        return try w.performAndWait {
            let nice = Town(context: w)
            nice.name = "Nice"
            try w.save()
            return nice.objectID
        }
    }

    static func state(_ f: QueryGenerationTests.Fixture) throws -> [String] {
        let check = f.context("check")
        return try check.performAndWait {
            let people = try check.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\Person.name)]))
            let towns = try check.fetch(FetchRequest<Town>(sortBy: [SortDescriptor(\Town.name)]))
            return people.map { "\($0.name):\($0.town?.name ?? "-")" } + towns.map { "T \($0.name) \($0.people.count)" }
        }
    }

    /// A pinned context deletes Ada, which another context deleted after the snapshot.
    @Test(arguments: [StoreType.sqlite, .inMemory], Policy.allCases)
    func pinnedDeleteOfARowDeletedElsewhere(_ type: StoreType, _ p: Policy) throws {
        let f = try QueryGenerationTests.Fixture(type)
        let view = try f.pinnedContext("view")
        view.mergePolicy = p.policy
        try f.deleteElsewhere(f.people[0], renameTownTo: "Lyon")
        let r: Result<Void, any Error> = view.performAndWait {
            Result {
                let ada = try view.existingObject(with: f.people[0])
                view.delete(ada)
                try view.save()
            }
        }
        if p == .error {
            #expect(throws: CoherenceError.self) { try r.get() }
        } else {
            #expect(throws: Never.self) { try r.get() }
        }
        #expect(try Self.state(f) == ["Bob:Lyon", "Cy:Lyon", "T Lyon 2"])
    }
}

extension NestedGenerationProbeTests {
    /// What history records of a save whose conflict a policy resolved: nothing when the
    /// store's values won (store trump on the only property changed, rollback); the stored
    /// values as old ones otherwise, and under overwrite also the property only the store had
    /// changed, which the save writes back.
    @Test(arguments: [MergePolicy.mergeByPropertyStoreTrump, .rollback, .overwrite, .mergeByPropertyObjectTrump])
    func historyOfResolvedConflicts(_ policy: MergePolicy) throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(.sqlite, in: dir)
        let w = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        let id = try w.performAndWait {
            let f = HFolder(context: w)
            f.name = "Inbox"
            f.position = 1
            try w.save()
            return f.objectID
        }
        let mine = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c, name: "mine")
        mine.mergePolicy = policy
        try mine.performAndWait { _ = try #require(mine.existingObject(with: id) as? HFolder).name }
        let theirs = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c, name: "theirs")
        try theirs.performAndWait {
            let f = try #require(theirs.existingObject(with: id) as? HFolder)
            f.name = "Theirs"
            f.position = 5
            try theirs.save()
        }
        try mine.performAndWait {
            let f = try #require(mine.existingObject(with: id) as? HFolder)
            f.position = 7
            try mine.save()
        }
        let final = try w.performAndWait { () throws -> String in
            w.reset()
            let f = try #require(w.existingObject(with: id) as? HFolder)
            return "\(f.name) \(f.position)"
        }
        let history = try allHistory(c)
        let last = try #require(history.last)
        let change = last.contextName == "mine" ? last.change(of: id) : nil
        switch policy.kind {
        case .storeTrump, .rollback:
            #expect(final == "Theirs 5")
            #expect(history.count == 2)
            #expect(change == nil)
        case .overwrite:
            #expect(final == "Inbox 7")
            #expect(change?.updatedProperties == ["name", "position"])
            #expect(change?.oldValues == ["name": .text("Theirs"), "position": .integer(5)])
            #expect(change?.newValues == ["name": .text("Inbox"), "position": .integer(7)])
        default:
            #expect(final == "Theirs 7")
            #expect(change?.updatedProperties == ["position"])
            #expect(change?.oldValues == ["position": .integer(5)])
            #expect(change?.newValues == ["position": .integer(7)])
        }
    }
}

extension NestedGenerationProbeTests {
    @Test(arguments: [false, true])
    func childCountsAndIDsSeeTheParentsPendingChanges(_ pinned: Bool) throws {
        let f = try QueryGenerationTests.Fixture(.sqlite)
        let parent = pinned ? try f.pinnedContext("parent") : f.context("parent")
        if pinned { try f.deleteElsewhere(f.people[2], renameTownTo: "Lyon") }
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child")
        try parent.performAndWait {
            let dee = Person(context: parent)
            dee.name = "Dee"
            dee.age = 99
            parent.delete(try parent.existingObject(with: f.people[0]))
            let bob = try #require(parent.existingObject(with: f.people[1]) as? Person)
            bob.age = 99
        }
        try child.performAndWait {
            #expect(try child.count(for: FetchRequest<Person>()) == 3)
            #expect(try child.count(for: FetchRequest<Person>(predicate: #Predicate { $0.age == 99 })) == 2)
            #expect(try child.count(for: FetchRequest<Person>(predicate: #Predicate { $0.age == 30 })) == 0)
            #expect(try child.fetchObjectIDs(FetchRequest<Person>(predicate: #Predicate { $0.age == 99 })).count == 2)
            var r = FetchRequest<Person>(
                predicate: #Predicate { $0.age >= 30 }, sortBy: [SortDescriptor(\Person.age), SortDescriptor(\Person.name)])
            r.fetchLimit = 2
            let names = try child.fetch(r).map(\.name)
            #expect(names == ["Cy", "Bob"])
            var d = FetchRequest<Person>(sortBy: [SortDescriptor(\Person.name)])
            d.fetchOffset = 1
            #expect(try child.fetch(d).map(\.name) == ["Cy", "Dee"])
            let towns = try child.fetch(FetchRequest<Town>())
            #expect(towns.first?.people.count == 2)
        }
    }
}

extension NestedGenerationProbeTests {
    @Test func childAddsAParentDeletedObjectToAManyToMany() throws {
        let f = try QueryGenerationTests.Fixture(.sqlite)
        let w = f.context("w")
        let clubID = try w.performAndWait {
            let club = Club(context: w)
            club.title = "Chess"
            try w.save()
            return club.objectID
        }
        let parent = f.context("parent")
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child")
        let ada = try child.performAndWait { try #require(child.existingObject(with: f.people[0]) as? Person) }
        try parent.performAndWait { parent.delete(try parent.existingObject(with: f.people[0])) }
        let r1: Result<Void, any Error> = child.performAndWait {
            Result {
                let club = try #require(child.existingObject(with: clubID) as? Club)
                club.members.insert(ada)
                try child.save()
            }
        }
        let r2: Result<Void, any Error> = parent.performAndWait { Result { try parent.save() } }
        #expect(throws: Never.self) { try r1.get() }
        #expect(throws: Never.self) { try r2.get() }
        let check = f.context("check")
        let members = try check.performAndWait {
            try #require(check.existingObject(with: clubID) as? Club).members.map(\.name).sorted()
        }
        #expect(try Self.state(f) == ["Bob:Lyon", "Cy:Lyon", "T Lyon 2"])
        #expect(members == [])
        let again: Result<Void, any Error> = parent.performAndWait { Result { try parent.save() } }
        #expect(throws: Never.self) { try again.get() }
    }
}

extension NestedGenerationProbeTests {
    @Test(arguments: [StoreType.sqlite, .inMemory], Policy.allCases)
    func pinnedInsertRelatedToARowDeletedElsewhere(_ type: StoreType, _ p: Policy) throws {
        let f = try QueryGenerationTests.Fixture(type)
        let niceID = try Self.saveNice(f)
        let view = try f.pinnedContext("view")
        view.mergePolicy = p.policy
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: view, name: "child")
        try view.performAndWait { _ = try #require(view.existingObject(with: niceID) as? Town).name }
        let other = f.context("other")
        try other.performAndWait {
            other.delete(try other.existingObject(with: niceID))
            try other.save()
        }
        try child.performAndWait {
            let nice = try #require(child.existingObject(with: niceID) as? Town)
            let dee = Person(context: child)
            dee.name = "Dee"
            dee.town = nice
            try child.save()
        }
        let r: Result<Void, any Error> = view.performAndWait { Result { try view.save() } }
        let s = try Self.state(f)
        if p == .error {
            #expect(throws: CoherenceError.self) { try r.get() }
            #expect(s == ["Ada:Lyon", "Bob:Lyon", "Cy:Lyon", "T Lyon 3"])
        } else {
            #expect(throws: Never.self) { try r.get() }
            #expect(s == ["Ada:Lyon", "Bob:Lyon", "Cy:Lyon", "Dee:-", "T Lyon 3"])
        }
    }
}

extension NestedGenerationProbeTests {
    @Test(arguments: [0, 1, 2])
    func childRefreshKeepsToManyEditsOverTheParentsChange(_ how: Int) throws {
        let f = try QueryGenerationTests.Fixture(.sqlite)
        let w = f.context("w")
        let clubID = try w.performAndWait {
            let club = Club(context: w)
            club.title = "Chess"
            club.members.insert(try #require(w.existingObject(with: f.people[0]) as? Person))
            try w.save()
            return club.objectID
        }
        let parent = f.context("parent")
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child")
        try child.performAndWait {
            let club = try #require(child.existingObject(with: clubID) as? Club)
            #expect(club.members.count == 1)
            club.members.insert(try #require(child.existingObject(with: f.people[1]) as? Person))
        }
        try parent.performAndWait {
            let club = try #require(parent.existingObject(with: clubID) as? Club)
            club.members.insert(try #require(parent.existingObject(with: f.people[2]) as? Person))
            club.title = "Go"
        }
        let names = try child.performAndWait { () throws -> [String] in
            let club = try #require(child.existingObject(with: clubID) as? Club)
            switch how {
            case 0: child.refreshAllObjects()
            case 1: child.refresh(club, mergeChanges: true)
            default: break
            }
            return club.members.map(\.name).sorted() + [club.title]
        }
        if how < 2 { #expect(names == ["Ada", "Bob", "Cy", "Go"]) }
        try child.performAndWait { try child.save() }
        try parent.performAndWait { try parent.save() }
        let check = f.context("check")
        let stored = try check.performAndWait { () throws -> [String] in
            let club = try #require(check.existingObject(with: clubID) as? Club)
            return club.members.map(\.name).sorted() + [club.title]
        }
        #expect(stored == ["Ada", "Bob", "Cy", "Go"])
    }
}
