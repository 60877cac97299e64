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
}
