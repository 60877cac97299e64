import BenchmarkSupport
import Coherence
import Foundation
import GRDB
import GRDBSQLite

enum Workloads {
    /// W1 and W6 on a fresh SQLite store.
    static func coherenceInserts(_ n: Int, savingEach: Bool, options: StoreOptions = StoreOptions()) throws -> Double {
        try withTemporaryDirectory { dir in
            try BenchmarkSupport.coherenceInserts(
                into: coherenceStore(dir.appendingPathComponent("c.sqlite"), options: options), n, savingEach: savingEach)
        }
    }

    // MARK: W1 insert N and save once

    static func w1(_ o: Options) throws -> WorkloadResult {
        let n = o.n(100_000)
        return try interleave(
            "W1", "insert \(n) objects, one save", reps: o.repetitions,
            [
                ("coherence", { try coherenceInserts(n, savingEach: false) }),
                (
                    "raw",
                    {
                        try withTemporaryDirectory { dir in
                            let db = try RawDB(dir.appendingPathComponent("r.sqlite"))
                            return try measure { try rawInsert(db, n: n) }
                        }
                    }
                ),
                (
                    "grdb",
                    {
                        try withTemporaryDirectory { dir in
                            let pool = try grdbPool(dir.appendingPathComponent("g.sqlite"))
                            return try measure {
                                try pool.write { db in for i in 0..<n { try gPerson(i, n).insert(db) } }
                            }
                        }
                    }
                )
            ])
    }

    // MARK: W2 fetch all and read every property

    static func w2(_ o: Options) throws -> WorkloadResult {
        let n = o.n(100_000)
        return try withTemporaryDirectory { dir in
            let c = try coherenceStore(dir.appendingPathComponent("c.sqlite"))
            try fillCoherence(c, n: n)
            let raw = try RawDB(dir.appendingPathComponent("r.sqlite"))
            try rawInsert(raw, n: n)
            let pool = try grdbPool(dir.appendingPathComponent("g.sqlite"))
            try pool.write { db in for i in 0..<n { try gPerson(i, n).insert(db) } }
            return try interleave(
                "W2", "fetch \(n), read every property", reps: o.repetitions,
                [
                    ("coherence", { try coherenceFetchAll(c) }),
                    (
                        "raw",
                        {
                            try measure {
                                let st = try raw.prepare("SELECT id, name, email, age, score, createdAt FROM person")
                                var s = 0
                                while sqlite3_step(st) == SQLITE_ROW {
                                    let id = Int(sqlite3_column_int64(st, 0))
                                    let name = columnText(st, 1), email = columnText(st, 2)
                                    let age = Int(sqlite3_column_int64(st, 3))
                                    let score = sqlite3_column_double(st, 4)
                                    let created = Date(timeIntervalSinceReferenceDate: sqlite3_column_double(st, 5))
                                    s &+=
                                        id &+ name.utf8.count &+ email.utf8.count &+ age &+ Int(score)
                                        &+ Int(created.timeIntervalSinceReferenceDate)
                                }
                                sqlite3_finalize(st)
                                sink &+= s
                            }
                        }
                    ),
                    (
                        "grdb",
                        {
                            try measure {
                                let people = try pool.read { db in try GPerson.fetchAll(db) }
                                var s = 0
                                for p in people {
                                    s &+=
                                        Int(p.id) &+ p.name.utf8.count &+ p.email.utf8.count &+ p.age &+ Int(p.score)
                                        &+ Int(p.createdAt.timeIntervalSinceReferenceDate)
                                }
                                sink &+= s
                            }
                        }
                    )
                ])
        }
    }

    // MARK: W3 range query, sorted, limited, 100 times

    static func w3(_ o: Options) throws -> WorkloadResult {
        let n = o.n(100_000)
        return try withTemporaryDirectory { dir in
            let c = try coherenceStore(dir.appendingPathComponent("c.sqlite"))
            try fillCoherence(c, n: n)
            let raw = try RawDB(dir.appendingPathComponent("r.sqlite"))
            try rawInsert(raw, n: n)
            let pool = try grdbPool(dir.appendingPathComponent("g.sqlite"))
            try pool.write { db in for i in 0..<n { try gPerson(i, n).insert(db) } }
            let context = backgroundContext(c)
            return try interleave(
                "W3", "age 30…40 by name, limit 1000, ×100", reps: o.repetitions,
                [
                    ("coherence", { try coherenceRange(context) }),
                    (
                        "raw",
                        {
                            try measure {
                                let st = try raw.prepare(
                                    "SELECT id, name, email, age, score, createdAt FROM person WHERE age BETWEEN ? AND ? ORDER BY name LIMIT ?"
                                )
                                for _ in 0..<100 {
                                    sqlite3_bind_int64(st, 1, 30)
                                    sqlite3_bind_int64(st, 2, 40)
                                    sqlite3_bind_int64(st, 3, 1000)
                                    var s = 0
                                    while sqlite3_step(st) == SQLITE_ROW { s &+= columnText(st, 1).utf8.count }
                                    sqlite3_reset(st)
                                    sink &+= s
                                }
                                sqlite3_finalize(st)
                            }
                        }
                    ),
                    (
                        "grdb",
                        {
                            try measure {
                                try pool.read { db in
                                    for _ in 0..<100 {
                                        let people = try GPerson.filter((30...40).contains(Column("age"))).order(Column("name")).limit(1000)
                                            .fetchAll(db)
                                        var s = 0
                                        for p in people { s &+= p.name.utf8.count }
                                        sink &+= s
                                    }
                                }
                            }
                        }
                    )
                ])
        }
    }

    // MARK: W4 change 10,000 registered objects and save

    static func w4(_ o: Options) throws -> WorkloadResult {
        let n = o.n(100_000), k = o.n(10_000)
        return try withTemporaryDirectory { dir in
            let c = try coherenceStore(dir.appendingPathComponent("c.sqlite"))
            try fillCoherence(c, n: n)
            let raw = try RawDB(dir.appendingPathComponent("r.sqlite"))
            try rawInsert(raw, n: n)
            let pool = try grdbPool(dir.appendingPathComponent("g.sqlite"))
            try pool.write { db in for i in 0..<n { try gPerson(i, n).insert(db) } }
            var round = 0.0
            return try interleave(
                "W4", "change score on \(k) objects, save", reps: o.repetitions,
                [
                    (
                        "coherence",
                        {
                            round += 1
                            return try coherenceChangeScores(c, k: k, round: round)
                        }
                    ),
                    (
                        "raw",
                        {
                            round += 1
                            return try measure {
                                try raw.exec("BEGIN")
                                let st = try raw.prepare("UPDATE person SET score = ? WHERE id = ?")
                                for i in 0..<k {
                                    sqlite3_bind_double(st, 1, round + Double(i))
                                    sqlite3_bind_int64(st, 2, Int64(i))
                                    sqlite3_step(st)
                                    sqlite3_reset(st)
                                }
                                sqlite3_finalize(st)
                                try raw.exec("COMMIT")
                            }
                        }
                    ),
                    (
                        "grdb",
                        {
                            round += 1
                            var people = try pool.read { db in try GPerson.filter(Column("id") < k).fetchAll(db) }
                            return try measure {
                                try pool.write { db in
                                    for j in people.indices {
                                        people[j].score = round + Double(people[j].id)
                                        try people[j].update(db)
                                    }
                                }
                            }
                        }
                    )
                ])
        }
    }

    // MARK: W5 delete 10,000 registered objects and save

    static func w5(_ o: Options) throws -> WorkloadResult {
        let k = o.n(10_000)
        return try interleave(
            "W5", "delete \(k) registered objects, save", reps: o.repetitions,
            [
                (
                    "coherence",
                    {
                        try withTemporaryDirectory { dir in
                            let c = try coherenceStore(dir.appendingPathComponent("c.sqlite"))
                            try fillCoherence(c, n: 2 * k)
                            return try coherenceDelete(c, k: k)
                        }
                    }
                ),
                (
                    "raw",
                    {
                        try withTemporaryDirectory { dir in
                            let raw = try RawDB(dir.appendingPathComponent("r.sqlite"))
                            try rawInsert(raw, n: 2 * k)
                            return try measure {
                                try raw.exec("BEGIN")
                                let st = try raw.prepare("DELETE FROM person WHERE id = ?")
                                for i in 0..<k {
                                    sqlite3_bind_int64(st, 1, Int64(i))
                                    sqlite3_step(st)
                                    sqlite3_reset(st)
                                }
                                sqlite3_finalize(st)
                                try raw.exec("COMMIT")
                            }
                        }
                    }
                ),
                (
                    "grdb",
                    {
                        try withTemporaryDirectory { dir in
                            let pool = try grdbPool(dir.appendingPathComponent("g.sqlite"))
                            try pool.write { db in for i in 0..<(2 * k) { try gPerson(i, 2 * k).insert(db) } }
                            let people = try pool.read { db in try GPerson.filter(Column("id") < k).fetchAll(db) }
                            return try measure {
                                try pool.write { db in for p in people { try p.delete(db) } }
                            }
                        }
                    }
                )
            ])
    }

    // MARK: W6 10,000 single-object inserts, each its own save

    static func w6(_ o: Options) throws -> WorkloadResult {
        let k = o.n(10_000)
        return try interleave(
            "W6", "\(k) single inserts, each saved", reps: o.repetitions,
            [
                ("coherence", { try coherenceInserts(k, savingEach: true) }),
                (
                    "raw",
                    {
                        try withTemporaryDirectory { dir in
                            let raw = try RawDB(dir.appendingPathComponent("r.sqlite"))
                            return try measure {
                                let st = try raw.prepare(
                                    "INSERT INTO person (id, name, email, age, score, createdAt) VALUES (?, ?, ?, ?, ?, ?)")
                                for i in 0..<k {
                                    try raw.exec("BEGIN")
                                    sqlite3_bind_int64(st, 1, Int64(i))
                                    bindText(st, 2, Data_.name(i, k))
                                    bindText(st, 3, Data_.email(i))
                                    sqlite3_bind_int64(st, 4, Int64(Data_.age(i)))
                                    sqlite3_bind_double(st, 5, Data_.score(i))
                                    sqlite3_bind_double(st, 6, Data_.created(i).timeIntervalSinceReferenceDate)
                                    sqlite3_step(st)
                                    sqlite3_reset(st)
                                    try raw.exec("COMMIT")
                                }
                                sqlite3_finalize(st)
                            }
                        }
                    }
                ),
                (
                    "grdb",
                    {
                        try withTemporaryDirectory { dir in
                            let pool = try grdbPool(dir.appendingPathComponent("g.sqlite"))
                            return try measure {
                                for i in 0..<k { try pool.write { db in try gPerson(i, k).insert(db) } }
                            }
                        }
                    }
                )
            ])
    }

    // MARK: W7 a to-one relationship walked on N fetched objects

    static func w7(_ o: Options) throws -> WorkloadResult {
        let n = o.n(100_000)
        return try withTemporaryDirectory { dir in
            let c = try coherenceStore(dir.appendingPathComponent("c.sqlite"))
            try fillCoherence(c, n: n, towns: 100)
            let raw = try RawDB(dir.appendingPathComponent("r.sqlite"))
            try rawInsert(raw, n: n, towns: 100)
            let pool = try grdbPool(dir.appendingPathComponent("g.sqlite"))
            try pool.write { db in
                for t in 0..<100 { try GTown(id: Int64(t + 1), name: "Town \(t)").insert(db) }
                for i in 0..<n { try gPerson(i, n, town: Int64(i % 100 + 1)).insert(db) }
            }
            return try interleave(
                "W7", "walk person.town on \(n) objects", reps: o.repetitions,
                [
                    ("coherence", { try coherenceWalk(c) }),
                    (
                        "raw",
                        {
                            try measure {
                                var towns: [Int64: String] = [:]
                                let t = try raw.prepare("SELECT id, name FROM town")
                                while sqlite3_step(t) == SQLITE_ROW { towns[sqlite3_column_int64(t, 0)] = columnText(t, 1) }
                                sqlite3_finalize(t)
                                let st = try raw.prepare("SELECT id, townId FROM person")
                                var s = 0
                                while sqlite3_step(st) == SQLITE_ROW { s &+= towns[sqlite3_column_int64(st, 1)]?.utf8.count ?? 0 }
                                sqlite3_finalize(st)
                                sink &+= s
                            }
                        }
                    ),
                    (
                        "grdb",
                        {
                            try measure {
                                try pool.read { db in
                                    let towns = Dictionary(uniqueKeysWithValues: try GTown.fetchAll(db).map { ($0.id, $0.name) })
                                    var s = 0
                                    for p in try GPerson.fetchAll(db) { s &+= p.townId.flatMap { towns[$0] }?.utf8.count ?? 0 }
                                    sink &+= s
                                }
                            }
                        }
                    )
                ])
        }
    }

    // MARK: W8 background save of 10,000 changes while the view context holds 1,000 (Mixed)

    static func w8(_ o: Options) async throws -> WorkloadResult {
        let k = o.n(10_000), held = o.n(1_000)
        var result = WorkloadResult(name: "W8", title: "Mixed: bg saves \(k), view holds \(held)")
        result.note = "time until the view context has the new values"
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("coherence-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let connect = GenericConnect<ContextStrategy.Mixed>(name: "W8", managedObjectModel: benchmarkModel)
        connect.storeLocation = dir
        try connect.start()
        try fillCoherence(connect.persistentStoreCoordinator, n: k)
        let view = connect.viewContext
        let heldIDs: [ObjectID] = try await view.perform {
            try view.fetch(FetchRequest<BPerson>(predicate: #Predicate { $0.id < held })).map {
                _ = $0.score; return $0.objectID
            }
        }
        guard let probe = heldIDs.last else { return result }
        for rep in 0..<o.repetitions {
            let events = view.events
            let background = connect.newBackgroundContext()
            let value = Double(rep + 1) * 1000
            let start = DispatchTime.now().uptimeNanoseconds
            try await background.perform {
                for p in try background.fetch(FetchRequest<BPerson>(predicate: #Predicate { $0.id < k })) { p.score = value + Double(p.id) }
                try background.save()
            }
            for await event in events where event.updated.contains(probe) { break }
            let seen: Double = await view.perform { (view.registeredObject(for: probe) as? BPerson)?.score ?? -1 }
            let t = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            if seen != value + Double(held - 1) { result.note += " (stale value seen!)" }
            result.times["coherence", default: []].append(t)
        }
        try connect.stop()
        return result
    }

    // MARK: W9 import 1,000,000 in batches of 10,000 with a reset between batches (peak memory)

    /// Runs in a child process so the peak is this import's alone.
    static func w9Child(_ o: Options) throws {
        let total = o.n(1_000_000), batch = 10_000
        try withTemporaryDirectory { dir in
            let c = try coherenceStore(dir.appendingPathComponent("c.sqlite"))
            let context = backgroundContext(c)
            var i = 0
            while i < total {
                let end = min(total, i + batch)
                try context.performAndWait {
                    for j in i..<end {
                        insertPerson(j, of: total, into: context)
                    }
                    try context.save()
                    context.reset()
                }
                i = end
            }
        }
        print("W9_PEAK_MB \(peakResidentMB())")
    }

    static func w9(_ o: Options) throws -> WorkloadResult {
        var result = WorkloadResult(name: "W9", title: "import \(o.n(1_000_000)) in batches of 10,000")
        result.unit = "MB"
        result.note = "peak resident memory of the importing process"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = ["--w9-child", "--scale", String(o.scale)]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        if let line = output.split(separator: "\n").first(where: { $0.hasPrefix("W9_PEAK_MB") }),
            let mb = Double(line.split(separator: " ").last ?? "")
        {
            result.times["coherence"] = [mb]
        }
        return result
    }

    // MARK: W10 ActionContext.merge of N incoming against N stored

    final class MergeAction: EntityAction {
        typealias ManagedObjectType = BPerson
        let incoming: [[String: any Sendable]]
        init(_ incoming: [[String: any Sendable]]) { self.incoming = incoming }
        func execute(context: ActionContext) throws { try context.merge(objects: incoming, for: BPerson.self) }
    }

    static func w10(_ o: Options) throws -> WorkloadResult {
        let n = o.n(100_000)
        // Stored: ids 0..<n. Incoming: ids n/4..<n (half updates: n/4..<3n/4 changed, a quarter unchanged? no:
        // updates = ids n/4..<3n/4 with new scores, inserts = n..<n+n/4, deletes = 0..<n/4).
        let updates = (n / 4)..<(3 * n / 4), inserts = n..<(n + n / 4), keep = (3 * n / 4)..<n
        var incoming: [[String: any Sendable]] = []
        incoming.reserveCapacity(n)
        for i in updates {
            incoming.append([
                "id": i, "name": Data_.name(i, n), "email": Data_.email(i), "age": Data_.age(i), "score": -1.0,
                "createdAt": Data_.created(i)
            ])
        }
        for i in keep {
            incoming.append([
                "id": i, "name": Data_.name(i, n), "email": Data_.email(i), "age": Data_.age(i), "score": Data_.score(i),
                "createdAt": Data_.created(i)
            ])
        }
        for i in inserts {
            incoming.append([
                "id": i, "name": Data_.name(i, n), "email": Data_.email(i), "age": Data_.age(i), "score": Data_.score(i),
                "createdAt": Data_.created(i)
            ])
        }
        incoming.shuffle()
        let payload = incoming
        var result = try interleave(
            "W10", "merge \(n) incoming vs \(n) stored", reps: o.repetitions,
            [
                (
                    "coherence",
                    {
                        try withTemporaryDirectory { dir in
                            let connect = GenericConnect<ContextStrategy.Mixed>(name: "W10", managedObjectModel: benchmarkModel)
                            connect.storeLocation = dir
                            try connect.start()
                            try fillCoherence(connect.persistentStoreCoordinator, n: n)
                            let proxy = try connect.execute(MergeAction(payload))
                            proxy.waitUntilFinished()
                            if proxy.completionStatus != .successful { print("W10 merge failed: \(String(describing: proxy.error))") }
                            try connect.stop()
                            return proxy.statistics.executionTime
                        }
                    }
                ),
                (
                    "baseline",
                    {
                        try withTemporaryDirectory { dir in
                            // Inserting the same objects and deleting a quarter: insert n in one save, then
                            // delete n/4 in one save.
                            let c = try coherenceStore(dir.appendingPathComponent("b.sqlite"))
                            let context = backgroundContext(c)
                            return try context.performAndWait {
                                try measure {
                                    var created: [BPerson] = []
                                    created.reserveCapacity(n)
                                    for i in 0..<n {
                                        let p = insertPerson(i, of: n, into: context)
                                        created.append(p)
                                    }
                                    try context.save()
                                    for p in created.prefix(n / 4) { context.delete(p) }
                                    try context.save()
                                }
                            }
                        }
                    }
                ),
                (
                    "singles",
                    {
                        try withTemporaryDirectory { dir in
                            // The baseline: the same inserts and deletes, one save at a time.
                            let c = try coherenceStore(dir.appendingPathComponent("s.sqlite"))
                            let context = backgroundContext(c)
                            return try context.performAndWait {
                                try measure {
                                    var created: [BPerson] = []
                                    created.reserveCapacity(n / 4)
                                    for i in 0..<n {
                                        let p = insertPerson(i, of: n, into: context)
                                        if i < n / 4 { created.append(p) }
                                        try context.save()
                                    }
                                    for p in created {
                                        context.delete(p)
                                        try context.save()
                                    }
                                }
                            }
                        }
                    }
                )
            ])
        result.note = "baseline: insert \(n) and delete \(n / 4) (one save each / one save per object)"
        return result
    }
}
