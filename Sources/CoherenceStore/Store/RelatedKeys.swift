/// Destinations of a to-many (or inverse to-one) relationship, by source key.
package typealias RelatedKeys = [Int64: [(primaryKey: Int64, entityNumber: Int)]]
