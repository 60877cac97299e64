import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// Every attribute keeps old, new and tombstone values in history.
final class HXValue: ManagedObject {
    @Attribute(.unique) var code: String = ""
    @Attribute([.recordsValuesInHistory, .preservesValueInHistoryOnDeletion]) var d: Double = 0
    @Attribute([.recordsValuesInHistory, .preservesValueInHistoryOnDeletion]) var f: Float = 0
    @Attribute([.recordsValuesInHistory, .preservesValueInHistoryOnDeletion]) var i: Int64 = 0
    @Attribute([.recordsValuesInHistory, .preservesValueInHistoryOnDeletion]) var s: String = ""
    @Attribute([.recordsValuesInHistory, .preservesValueInHistoryOnDeletion]) var dec: Decimal?
    @Attribute([.recordsValuesInHistory, .preservesValueInHistoryOnDeletion]) var date: Date?
    @Attribute([.recordsValuesInHistory, .preservesValueInHistoryOnDeletion]) var data: Data?
}

/// Child contexts, persistent history values and query generations together.
@Suite struct NestedHistoryGenerationTests {
    struct Values {
        var d: Double
        var f: Float
        var i: Int64
        var s: String
        var dec: Decimal?
        var date: Date?
        var data: Data?
    }

    static let big = String(repeating: "é\u{0}x", count: 350_000)
    static let first = Values(
        d: -0.0, f: -.infinity, i: .min, s: "a\u{0}b" + big,
        dec: Decimal(string: "-12345678901234567890.123456789"), date: Date(timeIntervalSinceReferenceDate: -63_000_000_000),
        data: Data([0, 1, 0, 255]))
    static let second = Values(
        d: .nan, f: .nan, i: .max, s: "", dec: Decimal(string: "0.000000000000000000000000001"),
        date: Date(timeIntervalSinceReferenceDate: 1e15), data: Data())
    static let third = Values(
        d: .infinity, f: -0.0, i: -1, s: "\u{0}", dec: nil, date: nil, data: nil)

    static func same(_ a: Double?, _ b: Double) -> Bool {
        guard let a else { return false }
        return a.bitPattern == b.bitPattern || (a.isNaN && b.isNaN)
    }
    static func same(_ a: Float?, _ b: Float) -> Bool {
        guard let a else { return false }
        return a.bitPattern == b.bitPattern || (a.isNaN && b.isNaN)
    }

    static func check(_ get: (String) -> StoredValue?, _ v: Values, _ what: String, change: PersistentHistoryChange, kind: Int) {
        func typed<T: PersistentValue>(_ key: String, _ t: T.Type) -> T? {
            switch kind {
            case 0: return change.oldValue(forKey: key, as: t)
            case 1: return change.newValue(forKey: key, as: t)
            default: return change.tombstoneValue(forKey: key, as: t)
            }
        }
        #expect(same(typed("d", Double.self), v.d), "\(what) d: \(String(describing: get("d")))")
        #expect(same(typed("f", Float.self), v.f), "\(what) f: \(String(describing: get("f")))")
        #expect(typed("i", Int64.self) == v.i, "\(what) i")
        let s = typed("s", String.self)
        #expect(s == v.s, "\(what) s: \(s?.utf8.count ?? -1) vs \(v.s.utf8.count)")
        if let dec = v.dec {
            #expect(typed("dec", Decimal.self) == dec, "\(what) dec: \(String(describing: get("dec")))")
        } else {
            #expect(get("dec") == .null, "\(what) dec null")
        }
        if let date = v.date {
            #expect(typed("date", Date.self) == date, "\(what) date")
        } else {
            #expect(get("date") == .null, "\(what) date null")
        }
        if let data = v.data {
            #expect(typed("data", Data.self) == data, "\(what) data: \(String(describing: get("data")))")
        } else {
            #expect(get("data") == .null, "\(what) data null")
        }
    }

    static func apply(_ v: Values, to o: HXValue) {
        o.d = v.d
        o.f = v.f
        o.i = v.i
        o.s = v.s
        o.dec = v.dec
        o.date = v.date
        o.data = v.data
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func historyGivesBackExtremeValues(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [HNote.self, HFolder.self, HTag.self, HXValue.self])
        let c = try makeHistoryCoordinator(type, in: dir, model: model)
        // (PostgreSQL text cannot hold NUL: a typed error, see ScalingOut.md.)
        let nul = type != .postgreSQL
        let first = Values(
            d: Self.first.d, f: Self.first.f, i: Self.first.i,
            s: nul ? Self.first.s : "ab" + Self.big.replacingOccurrences(of: "\u{0}", with: ""),
            dec: Self.first.dec, date: Self.first.date, data: Self.first.data)
        var third = Self.third
        if !nul { third.s = "z" }
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        let id = try context.performAndWait {
            let o = HXValue(context: context)
            o.code = "x"
            Self.apply(first, to: o)
            try context.save()
            return o.objectID
        }
        try context.performAndWait {
            let o = try #require(context.existingObject(with: id) as? HXValue)
            Self.apply(Self.second, to: o)
            try context.save()
        }
        try context.performAndWait {
            let o = try #require(context.existingObject(with: id) as? HXValue)
            Self.apply(third, to: o)
            try context.save()
        }
        try context.performAndWait {
            context.delete(try context.existingObject(with: id))
            try context.save()
        }
        let history = try allHistory(c)
        try #require(history.count == 4)
        let u1 = try #require(history[1].change(of: id))
        Self.check({ u1.oldValues?[$0] }, first, "u1 old", change: u1, kind: 0)
        Self.check({ u1.newValues?[$0] }, Self.second, "u1 new", change: u1, kind: 1)
        let u2 = try #require(history[2].change(of: id))
        Self.check({ u2.oldValues?[$0] }, Self.second, "u2 old", change: u2, kind: 0)
        Self.check({ u2.newValues?[$0] }, third, "u2 new", change: u2, kind: 1)
        let del = try #require(history[3].change(of: id))
        Self.check({ del.tombstone?[$0] }, third, "tombstone", change: del, kind: 2)
    }

    // MARK: Nested contexts

    @Test func childRefreshRollbackResetReadTheParentsUnsavedState() throws {
        let f = try QueryGenerationTests.Fixture(.sqlite)
        let parent = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: f.coordinator, name: "parent")
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child")
        try parent.performAndWait {
            let ada = try #require(parent.existingObject(with: f.people[0]) as? Person)
            ada.age = 40
            let town = try #require(parent.existingObject(with: f.town) as? Town)
            town.name = "ParentTown"
        }
        try child.performAndWait {
            let ada = try #require(child.existingObject(with: f.people[0]) as? Person)
            #expect(ada.age == 40)
            ada.age = 50
            child.refresh(ada, mergeChanges: false)
            #expect(ada.age == 40)
            ada.age = 51
            child.refresh(ada, mergeChanges: true)
            #expect(ada.age == 51)
            child.rollback()
            #expect(ada.age == 40)
            #expect(ada.town?.name == "ParentTown")
            ada.age = 52
            child.reset()
            let again = try #require(child.existingObject(with: f.people[0]) as? Person)
            #expect(again.age == 40)
            #expect(!child.hasChanges)
        }
    }

    @Test func childSaveThenParentRollbackLeavesTheStoreAndAFreshChildAsTheStoreIs() throws {
        let f = try QueryGenerationTests.Fixture(.sqlite)
        let parent = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: f.coordinator, name: "parent")
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child")
        try child.performAndWait {
            let ada = try #require(child.existingObject(with: f.people[0]) as? Person)
            ada.age = 77
            child.delete(try child.existingObject(with: f.people[1]))
            let dee = Person(context: child)
            dee.name = "Dee"
            let town = try #require(child.existingObject(with: f.town) as? Town)
            town.people.insert(dee)
            try child.save()
        }
        try parent.performAndWait {
            #expect(parent.hasChanges)
            parent.rollback()
            #expect(!parent.hasChanges)
            #expect(try parent.count(for: FetchRequest<Person>()) == 3)
            let ada = try #require(parent.existingObject(with: f.people[0]) as? Person)
            #expect(ada.age == 30)
            let town = try #require(parent.existingObject(with: f.town) as? Town)
            #expect(town.people.count == 3)
            try parent.save()
        }
        let fresh = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "fresh")
        try fresh.performAndWait {
            #expect(try fresh.count(for: FetchRequest<Person>()) == 3)
            let bob = try #require(fresh.existingObject(with: f.people[1]) as? Person)
            #expect(bob.name == "Bob")
        }
        let check = f.context("check")
        let n = try check.performAndWait { try check.count(for: FetchRequest<Person>()) }
        #expect(n == 3)
    }

    enum Policy: String, CaseIterable, CustomTestStringConvertible {
        case error, storeTrump, objectTrump, overwrite, rollback
        var testDescription: String { rawValue }
        var policy: MergePolicy {
            switch self {
            case .error: .error
            case .storeTrump: .mergeByPropertyStoreTrump
            case .objectTrump: .mergeByPropertyObjectTrump
            case .overwrite: .overwrite
            case .rollback: .rollback
            }
        }
    }

    /// A child deletes Bob and moves Cy to a new town, saves to its parent; another context
    /// changes Bob and Cy meanwhile; the parent saves.
    @Test(arguments: Policy.allCases)
    func childDeletesAndToManyEditsAgainstAConcurrentChange(_ p: Policy) throws {
        let f = try QueryGenerationTests.Fixture(.sqlite)
        let parent = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: f.coordinator, name: "parent")
        parent.mergePolicy = p.policy
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child")
        try child.performAndWait {
            child.delete(try child.existingObject(with: f.people[1]))
            let cy = try #require(child.existingObject(with: f.people[2]) as? Person)
            let town = Town(context: child)
            town.name = "Nice"
            town.people.insert(cy)
            try child.save()
        }
        let other = f.context("other")
        try other.performAndWait {
            let bob = try #require(other.existingObject(with: f.people[1]) as? Person)
            bob.age = 99
            let cy = try #require(other.existingObject(with: f.people[2]) as? Person)
            cy.score = 5
            try other.save()
        }
        let result: Result<Void, any Error> = parent.performAndWait { Result { try parent.save() } }
        let check = f.context("check")
        try check.performAndWait {
            let people = try check.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\Person.name)]))
            let towns = try check.fetch(FetchRequest<Town>(sortBy: [SortDescriptor(\Town.name)]))
            switch p {
            case .error:
                #expect(throws: CoherenceError.self) { try result.get() }
                #expect(people.map(\.name) == ["Ada", "Bob", "Cy"])
                #expect(people[1].age == 99)
                #expect(towns.map(\.name) == ["Lyon"])
                #expect(people.allSatisfy { $0.town?.name == "Lyon" })
            case .rollback:
                // Store wins for conflicting objects; inserts still go in.
                #expect(throws: Never.self) { try result.get() }
                #expect(people.map(\.name) == ["Ada", "Bob", "Cy"], "\(people.map(\.name))")
                #expect(people.first { $0.name == "Cy" }?.score == 5)
            default:
                #expect(throws: Never.self) { try result.get() }
                #expect(people.map(\.name) == ["Ada", "Cy"], "\(people.map(\.name))")
                let cy = people.last
                #expect(cy?.town?.name == "Nice")
                #expect(cy?.score == (p == .overwrite ? 0 : 5))
                #expect(towns.map(\.name) == ["Lyon", "Nice"])
                #expect(towns.first?.people.count == 1)
            }
        }
    }

    /// The notifications of a child save and of its parent's save.
    @Test func willAndDidSaveOfAChildAndOfItsParent() throws {
        let f = try QueryGenerationTests.Fixture(.sqlite)
        let parent = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: f.coordinator, name: "parent")
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child")
        let notes = LockedValue<[(Notification.Name, String?, [String: Any])]>([])
        var tokens: [any NSObjectProtocol] = []
        for name in [ManagedObjectContext.willSaveNotification, ManagedObjectContext.didSaveNotification] {
            for ctx in [parent, child] {
                tokens.append(
                    NotificationCenter.default.addObserver(forName: name, object: ctx, queue: nil) { n in
                        let info = (n.userInfo as? [String: Any]) ?? [:]
                        nonisolated(unsafe) let sendable = info
                        notes.withLock { $0.append((n.name, (n.object as? ManagedObjectContext)?.name, sendable)) }
                    })
            }
        }
        defer { for t in tokens { NotificationCenter.default.removeObserver(t) } }
        let deeID = try child.performAndWait {
            let ada = try #require(child.existingObject(with: f.people[0]) as? Person)
            ada.age = 70
            child.delete(try child.existingObject(with: f.people[1]))
            let dee = Person(context: child)
            dee.name = "Dee"
            try child.save()
            return dee.objectID
        }
        try parent.performAndWait { try parent.save() }
        let all = notes.withLock { $0 }
        try #require(all.count == 4)
        func ids(_ info: [String: Any], _ key: String) -> Set<ObjectID>? {
            if let s = info[key] as? Set<ObjectID> { return s }
            if let s = info[key + "_objectIDs"] as? Set<ObjectID> { return s }
            if let s = info[key] as? Set<ManagedObject> { return Set(s.map(\.objectID)) }
            return nil
        }
        #expect(all[0].0 == ManagedObjectContext.willSaveNotification && all[0].1 == "child")
        #expect(all[1].0 == ManagedObjectContext.didSaveNotification && all[1].1 == "child")
        #expect(all[2].0 == ManagedObjectContext.willSaveNotification && all[2].1 == "parent")
        #expect(all[3].0 == ManagedObjectContext.didSaveNotification && all[3].1 == "parent")
        let childDid = all[1].2
        // (The objects are live: the parent's save gives Dee its permanent ID; the IDs are as posted.)
        #expect((childDid["inserted"] as? Set<ManagedObject>)?.count == 1)
        #expect((childDid["inserted_objectIDs"] as? Set<ObjectID>) == [deeID])
        #expect(Set((childDid["updated"] as? Set<ManagedObject>)?.map(\.objectID) ?? []) == [f.people[0], f.town])
        #expect((childDid["deleted"] as? Set<ManagedObject>)?.map(\.objectID) == [f.people[1]])
        #expect(childDid["permanent_objectIDs"] == nil)
        let parentDid = all[3].2
        let inserted = (parentDid["inserted"] as? Set<ManagedObject>)?.map(\.objectID) ?? []
        #expect(inserted.count == 1)
        #expect(inserted.allSatisfy { !$0.isTemporaryID })
        #expect(Set((parentDid["updated"] as? Set<ManagedObject>)?.map(\.objectID) ?? []) == [f.people[0], f.town])
        #expect((parentDid["deleted"] as? Set<ManagedObject>)?.map(\.objectID) == [f.people[1]])
        #expect((parentDid["inserted_objectIDs"] as? Set<ObjectID>)?.count == 1)
        #expect((parentDid["deleted_objectIDs"] as? Set<ObjectID>) == [f.people[1]])
        // The town's to-many changed (Bob left it): the town is updated in both.
    }

    // MARK: Query generations

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aChildOfAPinnedParentReadsTheSnapshotEverywhere(_ type: StoreType) throws {
        let f = try QueryGenerationTests.Fixture(type)
        let parent = try f.pinnedContext("parent")
        let token = parent.queryGenerationToken
        let other = f.context("other")
        try other.performAndWait {
            let ada = try #require(other.existingObject(with: f.people[0]) as? Person)
            ada.age = 90
            try other.save()
        }
        try f.deleteElsewhere(f.people[1])
        _ = try f.coordinator.execute(BatchDeleteRequest(fetchRequest: FetchRequest<Person>()))
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child")
        try child.performAndWait {
            #expect(try child.count(for: FetchRequest<Person>()) == 3)
            let thirty = try child.fetch(FetchRequest<Person>(predicate: #Predicate { $0.age == 30 }))
            #expect(thirty.map(\.objectID) == [f.people[0]])
            let ninety = try child.count(for: FetchRequest<Person>(predicate: #Predicate { $0.age == 90 }))
            #expect(ninety == 0)
            let town = try #require(child.existingObject(with: f.town) as? Town)
            #expect(town.name == "Lyon")
            #expect(town.people.count == 3)
            let bob = try #require(child.existingObject(with: f.people[1]) as? Person)
            #expect(bob.name == "Bob")
            bob.score = 3
            try child.save()
        }
        try parent.performAndWait {
            #expect(parent.queryGenerationToken == token)
            #expect(try parent.count(for: FetchRequest<Person>()) == 3)
            // Refresh with merge keeps the change and reads the snapshot.
            let ada = try #require(parent.existingObject(with: f.people[0]) as? Person)
            ada.score = 8
            parent.refresh(ada, mergeChanges: true)
            #expect(ada.age == 30)
            #expect(ada.score == 8)
            parent.refresh(ada, mergeChanges: false)
            #expect(ada.age == 30)
            #expect(ada.score == 0)
        }
    }

    /// A pinned context saving an edit of an object deleted (batch) elsewhere: a conflict,
    /// nothing written.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aPinnedSaveOfAnObjectDeletedElsewhereIsAConflict(_ type: StoreType) throws {
        let f = try QueryGenerationTests.Fixture(type)
        let view = try f.pinnedContext("view")
        try view.performAndWait {
            let ada = try #require(view.existingObject(with: f.people[0]) as? Person)
            #expect(ada.name == "Ada")
        }
        _ = try f.coordinator.execute(BatchDeleteRequest(fetchRequest: FetchRequest<Person>(predicate: #Predicate { $0.name == "Ada" })))
        view.performAndWait {
            let ada = view.registeredObject(for: f.people[0]) as? Person
            ada?.age = 1
            let dee = Person(context: view)
            dee.name = "Dee"
            do {
                try view.save()
                Issue.record("saved")
            } catch {
                #expect((error as? CoherenceError)?.code == .conflict, "\(error)")
            }
        }
        let check = f.context("check")
        try check.performAndWait {
            let names = try check.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\Person.name)])).map(\.name)
            #expect(names == ["Bob", "Cy"])
        }
    }

    @Test func aTokenOfAnotherCoordinatorOfTheSameFileIsRefused() throws {
        let f = try QueryGenerationTests.Fixture(.sqlite)
        let view = try f.pinnedContext("view")
        let token = view.queryGenerationToken
        let c2 = PersistentStoreCoordinator(managedObjectModel: f.coordinator.managedObjectModel)
        try c2.addPersistentStore(type: .sqlite, at: f.coordinator.persistentStores[0].url)
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c2)
        other.performAndWait {
            do throws(CoherenceError) {
                try other.setQueryGeneration(from: token)
                Issue.record("accepted")
            } catch {
                #expect(error.code == .invalidQueryGenerationToken)
            }
            #expect(other.queryGenerationToken == nil)
        }
    }

    // MARK: History after trimming

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func fetchesAfterTrimmingAreCompleteOrExpired(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(type, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        for (n, author) in ["a", "b", "a", "b"].enumerated() {
            context.transactionAuthor = author
            try context.performAndWait {
                let note = HNote(context: context)
                note.code = "n\(n)"
                try context.save()
            }
        }
        let history = try allHistory(c)
        try #require(history.count == 4)
        let t = history.map(\.token)
        func fetch(after token: PersistentHistoryToken?) -> Result<[Int64], CoherenceError> {
            do throws(CoherenceError) {
                return .success(try c.execute(.fetchHistory(after: token)).transactions.map(\.token.transactionNumber))
            } catch { return .failure(error) }
        }
        _ = try c.execute(.deleteHistory(before: t[2]))
        #expect(try fetch(after: t[1]).get() == [t[2].transactionNumber, t[3].transactionNumber])
        #expect(try fetch(after: t[2]).get() == [t[3].transactionNumber])
        if case .failure(let e) = fetch(after: t[0]) { #expect(e.code == .historyTokenExpired) } else { Issue.record("t0 not expired") }
        var byAuthor = PersistentHistoryChangeRequest.fetchHistory(after: t[1])
        byAuthor.authors = ["a"]
        let a = try c.execute(byAuthor).transactions.map(\.token.transactionNumber)
        #expect(a == [t[2].transactionNumber])
        _ = try c.execute(.deleteHistory(before: nil))
        #expect(try fetch(after: t[3]).get() == [])
        #expect(try fetch(after: nil).get() == [])
        if case .failure(let e) = fetch(after: t[2]) { #expect(e.code == .historyTokenExpired) } else { Issue.record("t2 not expired") }
        let date = try c.execute(.fetchHistory(after: Date.distantPast)).transactions
        #expect(date.isEmpty)
        // A new save after a full trim: fetch after the last token sees it.
        try context.performAndWait {
            let note = HNote(context: context)
            note.code = "n9"
            try context.save()
        }
        #expect(try fetch(after: t[3]).get() == [t[3].transactionNumber + 1])
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func prefetchBatchesAndNewRowsReadTheSnapshot(_ type: StoreType) throws {
        let f = try QueryGenerationTests.Fixture(type)
        let view = try f.pinnedContext("view")
        let other = f.context("other")
        let deeID = try other.performAndWait {
            let nice = Town(context: other)
            nice.name = "Nice"
            let ada = try #require(other.existingObject(with: f.people[0]) as? Person)
            ada.town = nice
            ada.age = 90
            let cy = try #require(other.existingObject(with: f.people[2]) as? Person)
            cy.age = 91
            let dee = Person(context: other)
            dee.name = "Dee"
            dee.town = nice
            try other.save()
            return dee.objectID
        }
        try f.deleteElsewhere(f.people[1])
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: view, name: "child")
        for ctx in [view, child] {
            try ctx.performAndWait {
                var r = FetchRequest<Person>(sortBy: [SortDescriptor(\Person.name)])
                r.relationshipKeyPathsForPrefetching = ["town"]
                let people = try ctx.fetch(r)
                #expect(people.map(\.name) == ["Ada", "Bob", "Cy"])
                #expect(people.map { $0.town?.name } == ["Lyon", "Lyon", "Lyon"])
                var towns = FetchRequest<Town>()
                towns.relationshipKeyPathsForPrefetching = ["people"]
                let all = try ctx.fetch(towns)
                #expect(all.map(\.name) == ["Lyon"])
                #expect(all.first?.people.count == 3)
                var batched = FetchRequest<Person>(sortBy: [SortDescriptor(\Person.age)])
                batched.fetchBatchSize = 1
                let ages = try ctx.fetch(batched).map(\.age)
                #expect(ages == [30, 31, 32])
                let ids = try ctx.fetchObjectIDs(FetchRequest<Person>(predicate: #Predicate { $0.town?.name == "Lyon" }))
                #expect(Set(ids) == Set(f.people))
                #expect(throws: CoherenceError.self) { try ctx.existingObject(with: deeID) }
            }
        }
    }

    // MARK: History of nested saves

    @Test(arguments: [MergePolicy.mergeByPropertyObjectTrump, .overwrite])
    func aPinnedParentsSaveOfAChildsEditRecordsTheStoredOldValue(_ policy: MergePolicy) throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(.sqlite, in: dir)
        let id = try HistoryValuesTests.insertNote(c)
        let parent = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c, name: "parent")
        parent.mergePolicy = policy
        try parent.performAndWait {
            try parent.setQueryGeneration(from: .current)
            let note = try #require(parent.existingObject(with: id) as? HNote)
            #expect(note.rank == 1)
        }
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c, name: "other")
        try other.performAndWait {
            let note = try #require(other.existingObject(with: id) as? HNote)
            note.rank = 5
            try other.save()
        }
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child")
        try child.performAndWait {
            let note = try #require(child.existingObject(with: id) as? HNote)
            #expect(note.rank == 1)
            note.rank = 7
            try child.save()
        }
        try parent.performAndWait { try parent.save() }
        let last = try #require(allHistory(c).last)
        #expect(last.contextName == "parent")
        let update = try #require(last.change(of: id))
        #expect(update.oldValue(forKey: "rank", as: Int.self) == 5)
        #expect(update.newValue(forKey: "rank", as: Int.self) == 7)
    }

    @Test func nestedEditsUndoneOrRepeatedRecordWhatTheStoreSaw() throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(.sqlite, in: dir)
        let id = try HistoryValuesTests.insertNote(c)
        let parent = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c, name: "parent")
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child")
        // Changed in a child, changed back in the parent: nothing to record.
        try child.performAndWait {
            let note = try #require(child.existingObject(with: id) as? HNote)
            note.rank = 2
            try child.save()
        }
        let tempID = try parent.performAndWait {
            let note = try #require(parent.existingObject(with: id) as? HNote)
            #expect(note.rank == 2)
            note.rank = 1
            // Inserted in the parent, deleted by a child: nothing recorded either.
            let temp = HNote(context: parent)
            temp.code = "temp"
            return temp.objectID
        }
        try child.performAndWait {
            child.delete(try child.existingObject(with: tempID))
            try child.save()
        }
        try parent.performAndWait { try parent.save() }
        #expect(try allHistory(c).count == 1)
        // Two child saves then one parent save: old value from the store, new from the last.
        for rank in [3, 4] {
            try child.performAndWait {
                let note = try #require(child.existingObject(with: id) as? HNote)
                note.rank = rank
                try child.save()
            }
        }
        // An edit then a delete in a child: the tombstone holds the stored title.
        try parent.performAndWait { try parent.save() }
        try child.performAndWait {
            let note = try #require(child.existingObject(with: id) as? HNote)
            note.title = "Edited"
            try child.save()
            child.delete(note)
            try child.save()
        }
        try parent.performAndWait { try parent.save() }
        let history = try allHistory(c)
        try #require(history.count == 3)
        let update = try #require(history[1].change(of: id))
        #expect(update.oldValue(forKey: "rank", as: Int.self) == 1)
        #expect(update.newValue(forKey: "rank", as: Int.self) == 4)
        let delete = try #require(history[2].change(of: id))
        #expect(delete.changeType == .delete)
        #expect(delete.tombstoneValue(forKey: "title", as: String.self) == "First")
        #expect(delete.tombstoneValue(forKey: "code", as: String.self) == "n1")
    }

    @Test func aChildsObjectOfAParentsInsertKeepsItsEditAcrossTheParentsSave() throws {
        let dir = try TemporaryDirectory()
        let (coordinator, parent, child) = try NestedContextPermanentIDTests.parentAndChild(in: dir)
        let osloID = parent.performAndWait {
            let oslo = Town(context: parent)
            oslo.name = "Oslo"
            return oslo.objectID
        }
        let held = try child.performAndWait {
            let oslo = try #require(child.existingObject(with: osloID) as? Town)
            oslo.population = 9
            let ada = Person(context: child)
            ada.name = "Ada"
            ada.town = oslo
            return oslo
        }
        try parent.performAndWait { try parent.save() }
        try child.performAndWait {
            let oslo = held
            #expect(oslo.population == 9)
            try child.save()
            #expect(!oslo.objectID.isTemporaryID)
        }
        try parent.performAndWait { try parent.save() }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let towns = try reader.performAndWait {
            try reader.fetch(FetchRequest<Town>()).map { "\($0.name) \($0.population) \($0.people.map(\.name))" }
        }
        #expect(towns == ["Oslo 9 [\"Ada\"]"])
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aPinnedContextRefreshesAnObjectDeletedElsewhereFromItsSnapshot(_ type: StoreType) throws {
        let f = try QueryGenerationTests.Fixture(type)
        let view = try f.pinnedContext("view")
        try f.deleteElsewhere(f.people[0])
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: view, name: "child")
        try view.performAndWait {
            let ada = try #require(view.existingObject(with: f.people[0]) as? Person)
            ada.score = 2
            view.refresh(ada, mergeChanges: true)
            #expect(ada.name == "Ada")
            #expect(ada.score == 2)
            #expect(ada.town?.name == "Lyon")
            view.refresh(ada, mergeChanges: false)
            #expect(ada.name == "Ada")
            #expect(ada.score == 0)
        }
        try child.performAndWait {
            let ada = try #require(child.existingObject(with: f.people[0]) as? Person)
            #expect(ada.name == "Ada")
            child.refreshAllObjects()
            #expect(ada.name == "Ada")
            child.reset()
            #expect(try child.count(for: FetchRequest<Person>()) == 3)
        }
        try view.performAndWait { () throws -> Void in
            view.reset()
            #expect(try view.count(for: FetchRequest<Person>()) == 2)
            #expect(throws: CoherenceError.self) { try view.existingObject(with: f.people[0]) }
        }
        let left = try child.performAndWait { try child.count(for: FetchRequest<Person>()) }
        #expect(left == 2)
    }
}
