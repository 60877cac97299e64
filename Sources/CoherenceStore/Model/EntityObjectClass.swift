/// What the model needs from the class of an entity's objects, which lives in a layer above
/// (`ManagedObject` and its subclasses conform): the model calls it while it loads.
package protocol EntityObjectClass: AnyObject {
    /// Prepares objects of this class for `entity` once the entity's properties have their
    /// slots (the class may keep what it computes in ``EntityDescription/objectClassData``).
    /// - Throws: ``ModelError`` when the class does not fit the entity.
    static func prepareObjects(of entity: EntityDescription) throws(ModelError)
}
