import Foundation
import Testing
@testable import Coherence
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// Rows read where libpq received them (`PostgreSQLConnection.query`), and the integers parsed
/// from their text without a `String` in between.
@Suite struct PostgreSQLRowsTests {
    @Test func integersParseExactlyOrNotAtAll() {
        func parse(_ text: String) -> Int64? {
            var text = text
            return text.withUTF8 { PostgreSQLValue.integer(UnsafeRawBufferPointer($0)) }
        }
        #expect(parse("0") == 0)
        #expect(parse("-17") == -17)
        #expect(parse("9223372036854775807") == .max)
        #expect(parse("-9223372036854775808") == .min)
        #expect(parse("9223372036854775808") == nil)
        #expect(parse("-9223372036854775809") == nil)
        for bad in ["", "-", "1.5", "12a", " 1", "+1"] { #expect(parse(bad) == nil, "\(bad)") }
    }

    @Test(.postgreSQLServer) func queriedRowsAreTheExecutedRows() throws {
        let c = try PostgreSQLTestServer.connection()
        let sql = """
            SELECT i, i::TEXT || 'é', i * 0.5::FLOAT8, CASE WHEN i % 3 = 0 THEN NULL ELSE decode('00ff', 'hex') END, i % 2 = 0
            FROM generate_series(-5, 300) AS i WHERE i <> $1
            """
        let executed = try c.execute(sql, [.integer(7)]).rows
        let queried = try c.query(sql, [.integer(7)]) { rows in
            (0..<Int32(rows.count)).map { r in (0..<Int32(rows.columnCount)).map { rows.value(r, $0) } }
        }
        #expect(executed.count == 305)
        #expect(queried == executed)
        #expect(queried.first == [.integer(-5), .text("-5é"), .real(-2.5), .blob(Data([0, 0xFF])), .integer(0)])
    }

    /// `query` reads results in binary form; every column type reads as the text form does.
    @Test(.postgreSQLServer) func binaryRowsReadAsTextRows() throws {
        let c = try PostgreSQLTestServer.connection()
        let sql = """
            SELECT i::INT2, i::INT4, i::OID, (i * 0.25)::FLOAT4, (i * 1e300)::FLOAT8,
                   (i * 1.25)::NUMERIC(12, 3), (i::NUMERIC * 123456789.0001), (i::NUMERIC / 100000000), (1e20 * i)::NUMERIC,
                   CASE i % 4 WHEN 0 THEN 'NaN'::FLOAT8 WHEN 1 THEN 'Infinity' WHEN 2 THEN '-Infinity' ELSE -0.0 END,
                   CASE WHEN i % 2 = 0 THEN 'NaN'::NUMERIC ELSE 0::NUMERIC(5, 2) END, ''::TEXT, 'x'::VARCHAR
            FROM generate_series(0, 40) AS i WHERE i <> $1
            """
        let executed = try c.execute(sql, [.integer(7)]).rows
        let queried = try c.query(sql, [.integer(7)]) { rows in
            #expect(rows.binary)
            return (0..<Int32(rows.count)).map { r in (0..<Int32(rows.columnCount)).map { rows.value(r, $0) } }
        }
        #expect(executed.count == 40)
        #expect(queried.description == executed.description)
        #expect(queried[3][5] == .text("3.750") && queried[3][6] == .text("370370367.0003"))
    }
}
