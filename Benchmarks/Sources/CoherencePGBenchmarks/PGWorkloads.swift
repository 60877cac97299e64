import BenchmarkSupport
import CBenchLibPQ
import Coherence
import Foundation

/// W1–W7 (see Documentation/Performance.md) four ways: Coherence's PostgreSQL store ("coherence"),
/// hand-written libpq ("libpq"), Fluent ("fluent") and PostgresNIO ("nio").
enum PGWorkloads {
    // MARK: W1 insert N and save once

    static func w1(_ o: Options, _ sides: Sides) throws -> WorkloadResult {
        let n = o.n(100_000)
        let fluent = sides.fluent, nio = sides.nio
        return try interleave(
            "W1", "insert \(n) objects, one save", reps: o.repetitions,
            [
                (
                    "coherence",
                    {
                        let c = try sides.freshCoherence()
                        defer { sides.close(c) }
                        return try coherenceInserts(into: c, n, savingEach: false)
                    }
                ),
                (
                    "libpq",
                    {
                        try sides.raw.makeTables()
                        return try measure { try rawInsert(sides.raw, n: n) }
                    }
                ),
                (
                    "fluent",
                    {
                        try sides.fluentTables.makeTables(dateType: "TIMESTAMPTZ")
                        return try blocking { try await measureAsync { try await fluent.insertAll(n: n) } }
                    }
                ),
                (
                    "nio",
                    {
                        try sides.nioTables.makeTables(dateType: "TIMESTAMPTZ")
                        return try blocking { try await measureAsync { try await NIOSide.insertAll(nio, n: n) } }
                    }
                )
            ])
    }

    // MARK: W2 fetch all and read every property

    static func w2(_ o: Options, _ sides: Sides) throws -> WorkloadResult {
        let n = o.n(100_000)
        let c = try sides.fill(n: n)
        defer { sides.close(c) }
        let raw = sides.raw, fluent = sides.fluent, nio = sides.nio
        return try interleave(
            "W2", "fetch \(n), read every property", reps: o.repetitions,
            [
                ("coherence", { try coherenceFetchAll(c) }),
                (
                    "libpq",
                    {
                        try measure {
                            try raw.prepare("", #"SELECT id, name, email, age, score, "createdAt" FROM person"#)
                            let r = try raw.run("", [])
                            var s = 0
                            for row in 0..<PQntuples(r) {
                                let id = int(r, row, 0)
                                let name = text(r, row, 1), email = text(r, row, 2)
                                let age = int(r, row, 3)
                                let score = double(r, row, 4)
                                let created = Date(timeIntervalSinceReferenceDate: double(r, row, 5))
                                s &+=
                                    id &+ name.utf8.count &+ email.utf8.count &+ age &+ Int(score)
                                    &+ Int(created.timeIntervalSinceReferenceDate)
                            }
                            PQclear(r)
                            sink &+= s
                        }
                    }
                ),
                ("fluent", { try blocking { try await measureAsync { sink &+= try await fluent.fetchAll() } } }),
                ("nio", { try blocking { try await measureAsync { sink &+= try await NIOSide.fetchAll(nio) } } })
            ])
    }

    // MARK: W3 range query, sorted, limited, 100 times

    static func w3(_ o: Options, _ sides: Sides) throws -> WorkloadResult {
        let n = o.n(100_000)
        let c = try sides.fill(n: n)
        defer { sides.close(c) }
        let context = backgroundContext(c)
        let raw = sides.raw, fluent = sides.fluent, nio = sides.nio
        return try interleave(
            "W3", "age 30…40 by name, limit 1000, ×100", reps: o.repetitions,
            [
                ("coherence", { try coherenceRange(context) }),
                (
                    "libpq",
                    {
                        try measure {
                            try raw.prepare(
                                "",
                                #"SELECT id, name, email, age, score, "createdAt" FROM person WHERE age BETWEEN $1 AND $2 ORDER BY name LIMIT $3"#
                            )
                            for _ in 0..<100 {
                                let r = try raw.run("", ["30", "40", "1000"])
                                var s = 0
                                for row in 0..<PQntuples(r) { s &+= text(r, row, 1).utf8.count }
                                PQclear(r)
                                sink &+= s
                            }
                        }
                    }
                ),
                ("fluent", { try blocking { try await measureAsync { sink &+= try await fluent.range() } } }),
                ("nio", { try blocking { try await measureAsync { sink &+= try await NIOSide.range(nio) } } })
            ])
    }

    // MARK: W4 change 10,000 registered objects and save

    static func w4(_ o: Options, _ sides: Sides) throws -> WorkloadResult {
        let n = o.n(100_000), k = o.n(10_000)
        let c = try sides.fill(n: n)
        defer { sides.close(c) }
        let raw = sides.raw, fluent = sides.fluent, nio = sides.nio
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
                    "libpq",
                    {
                        round += 1
                        return try measure {
                            try raw.exec("BEGIN")
                            try raw.prepare("", "UPDATE person SET score = $1 WHERE id = $2")
                            for i in 0..<k { try raw.step("", [String(round + Double(i)), String(i)]) }
                            try raw.exec("COMMIT")
                        }
                    }
                ),
                (
                    "fluent",
                    {
                        round += 1
                        let value = round
                        return try blocking {
                            let people = try await fluent.first(k)
                            return try await measureAsync { try await fluent.changeScores(people, round: value) }
                        }
                    }
                ),
                (
                    "nio",
                    {
                        round += 1
                        let value = round
                        return try blocking { try await measureAsync { try await NIOSide.changeScores(nio, k: k, round: value) } }
                    }
                )
            ])
    }

    // MARK: W5 delete 10,000 registered objects and save

    static func w5(_ o: Options, _ sides: Sides) throws -> WorkloadResult {
        let k = o.n(10_000)
        let raw = sides.raw, fluent = sides.fluent, nio = sides.nio
        return try interleave(
            "W5", "delete \(k) registered objects, save", reps: o.repetitions,
            [
                (
                    "coherence",
                    {
                        let c = try sides.freshCoherence()
                        defer { sides.close(c) }
                        try fillCoherence(c, n: 2 * k)
                        return try coherenceDelete(c, k: k)
                    }
                ),
                (
                    "libpq",
                    {
                        try raw.makeTables()
                        try rawInsert(raw, n: 2 * k)
                        return try measure {
                            try raw.exec("BEGIN")
                            try raw.prepare("", "DELETE FROM person WHERE id = $1")
                            for i in 0..<k { try raw.step("", [String(i)]) }
                            try raw.exec("COMMIT")
                        }
                    }
                ),
                (
                    "fluent",
                    {
                        try sides.fluentTables.makeTables(dateType: "TIMESTAMPTZ")
                        try rawInsert(sides.fluentTables, n: 2 * k, timestamps: true)
                        return try blocking {
                            let people = try await fluent.first(k)
                            return try await measureAsync { try await fluent.delete(people) }
                        }
                    }
                ),
                (
                    "nio",
                    {
                        try sides.nioTables.makeTables(dateType: "TIMESTAMPTZ")
                        try rawInsert(sides.nioTables, n: 2 * k, timestamps: true)
                        return try blocking { try await measureAsync { try await NIOSide.delete(nio, k: k) } }
                    }
                )
            ])
    }

    // MARK: W6 10,000 single-object inserts, each its own save

    static func w6(_ o: Options, _ sides: Sides) throws -> WorkloadResult {
        let k = o.n(10_000)
        let raw = sides.raw, fluent = sides.fluent, nio = sides.nio
        return try interleave(
            "W6", "\(k) single inserts, each saved", reps: o.repetitions,
            [
                (
                    "coherence",
                    {
                        let c = try sides.freshCoherence()
                        defer { sides.close(c) }
                        return try coherenceInserts(into: c, k, savingEach: true)
                    }
                ),
                (
                    "libpq",
                    {
                        try raw.makeTables()
                        return try measure {
                            // Each INSERT is its own transaction (autocommit).
                            try raw.prepare(
                                "", #"INSERT INTO person (id, name, email, age, score, "createdAt") VALUES ($1, $2, $3, $4, $5, $6)"#)
                            for i in 0..<k {
                                try raw.step(
                                    "",
                                    [
                                        String(i), Data_.name(i, k), Data_.email(i), String(Data_.age(i)), String(Data_.score(i)),
                                        String(Data_.created(i).timeIntervalSinceReferenceDate)
                                    ])
                            }
                        }
                    }
                ),
                (
                    "fluent",
                    {
                        try sides.fluentTables.makeTables(dateType: "TIMESTAMPTZ")
                        return try blocking { try await measureAsync { try await fluent.singleInserts(k: k) } }
                    }
                ),
                (
                    "nio",
                    {
                        try sides.nioTables.makeTables(dateType: "TIMESTAMPTZ")
                        return try blocking { try await measureAsync { try await NIOSide.singleInserts(nio, k: k) } }
                    }
                )
            ])
    }

    // MARK: W7 a to-one relationship walked on N fetched objects

    static func w7(_ o: Options, _ sides: Sides) throws -> WorkloadResult {
        let n = o.n(100_000)
        let c = try sides.fill(n: n, towns: 100)
        defer { sides.close(c) }
        let raw = sides.raw, fluent = sides.fluent, nio = sides.nio
        return try interleave(
            "W7", "walk person.town on \(n) objects", reps: o.repetitions,
            [
                ("coherence", { try coherenceWalk(c) }),
                (
                    "libpq",
                    {
                        try measure {
                            var towns: [Int: String] = [:]
                            try raw.prepare("", "SELECT id, name FROM town")
                            let t = try raw.run("", [])
                            for row in 0..<PQntuples(t) { towns[int(t, row, 0)] = text(t, row, 1) }
                            PQclear(t)
                            try raw.prepare("", #"SELECT id, "townId" FROM person"#)
                            let r = try raw.run("", [])
                            var s = 0
                            for row in 0..<PQntuples(r) where PQgetisnull(r, row, 1) == 0 { s &+= towns[int(r, row, 1)]?.utf8.count ?? 0 }
                            PQclear(r)
                            sink &+= s
                        }
                    }
                ),
                ("fluent", { try blocking { try await measureAsync { sink &+= try await fluent.walk() } } }),
                ("nio", { try blocking { try await measureAsync { sink &+= try await NIOSide.walk(nio) } } })
            ])
    }
}
