import Coherence
import Foundation

// Coherence's side of the workloads, the same on every store type: each returns the seconds of
// the measured part (what the workload's table describes).

/// W1 and W6: inserts `n` people into the (empty) store of `c`, saving once at the end (W1) or
/// after each insert (W6).
public func coherenceInserts(into c: PersistentStoreCoordinator, _ n: Int, savingEach: Bool) throws -> Double {
    let context = backgroundContext(c)
    return try context.performAndWait {
        try measure {
            for i in 0..<n {
                insertPerson(i, of: n, into: context)
                if savingEach { try context.save() }
            }
            if !savingEach { try context.save() }
        }
    }
}

/// W2: fetches every person and reads every property.
public func coherenceFetchAll(_ c: PersistentStoreCoordinator) throws -> Double {
    let context = backgroundContext(c)
    return try context.performAndWait {
        try measure {
            var s = 0
            for p in try context.fetch(FetchRequest<BPerson>()) { s &+= touch(p) }
            sink &+= s
        }
    }
}

/// W3: `age` between 30 and 40, sorted by name, limit 1,000, 100 times, in `context`.
public func coherenceRange(_ context: ManagedObjectContext) throws -> Double {
    try context.performAndWait {
        try measure {
            let request = FetchRequest<BPerson>(
                predicate: #Predicate { $0.age >= 30 && $0.age <= 40 }, sortBy: [SortDescriptor(\.name)], fetchLimit: 1000)
            for _ in 0..<100 {
                var s = 0
                for p in try context.fetch(request) { s &+= p.name.utf8.count }
                sink &+= s
            }
        }
    }
}

/// W4: changes the score of the `k` first people of `c` (fetched and loaded first) and saves.
public func coherenceChangeScores(_ c: PersistentStoreCoordinator, k: Int, round: Double) throws -> Double {
    let context = backgroundContext(c)
    return try context.performAndWait {
        let people = try context.fetch(FetchRequest<BPerson>(predicate: #Predicate { $0.id < k }))
        for p in people { _ = p.score }  // registered and loaded, as the workload says
        return try measure {
            for p in people { p.score = round + Double(p.id) }
            try context.save()
        }
    }
}

/// W5: deletes the `k` first people of `c` (fetched first) and saves.
public func coherenceDelete(_ c: PersistentStoreCoordinator, k: Int) throws -> Double {
    let context = backgroundContext(c)
    return try context.performAndWait {
        let people = try context.fetch(FetchRequest<BPerson>(predicate: #Predicate { $0.id < k }))
        return try measure {
            for p in people { context.delete(p) }
            try context.save()
        }
    }
}

/// W7: fetches every person and reads its town's name.
public func coherenceWalk(_ c: PersistentStoreCoordinator) throws -> Double {
    let context = backgroundContext(c)
    return try context.performAndWait {
        try measure {
            var s = 0
            for p in try context.fetch(FetchRequest<BPerson>()) { s &+= p.town?.name.utf8.count ?? 0 }
            sink &+= s
        }
    }
}

/// A latency workload's writer process: one save per line read from standard input (by
/// `author`, when given), each reported as `T <start ns> <end ns>` (monotonic clock) once
/// `save()` returned; `READY` first.
public func writerChild(_ c: PersistentStoreCoordinator, author: String? = nil) throws {
    let context = backgroundContext(c)
    context.transactionAuthor = author
    let out = FileHandle.standardOutput
    out.write(Data("READY\n".utf8))
    var i = 0
    while readLine() != nil {
        i += 1
        let n = i
        let start = monotonicNanoseconds()
        try context.performAndWait {
            insertPerson(n, of: 1_000_000, into: context)
            try context.save()
        }
        let end = monotonicNanoseconds()
        out.write(Data("T \(start) \(end)\n".utf8))
    }
}
