import CCoherenceSQLite

extension SQLiteStatement {
    /// Binds any ``PersistentValue`` (Int, String, Date, UUID, Decimal, …).
    package func bind<T: PersistentValue>(_ value: T, at index: Int32) {
        bind(value.storedValue, at: index)
    }

    /// Reads a column as a typed value; throws when the stored value is not of that type.
    package func decode<T: PersistentValue>(_ type: T.Type = T.self, at column: Int32) throws(SQLiteError) -> T {
        let v = value(column)
        guard let t = T(storedValue: v) else {
            throw SQLiteError(
                extendedResultCode: SQLITE_MISMATCH,
                message: "column \(column) holds \(v.kindName), not \(T.self)", sql: sql)
        }
        return t
    }
}
