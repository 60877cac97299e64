/// How the property wrappers of one class find the slots of one entity's properties.
///
/// A typed accessor knows its property only through its storage key path (`\Person._name`),
/// which, inlined, is a field offset: it reads the wrapper at that offset in the object's
/// ``template``, an object of the same class whose wrappers hold their properties' slots.
///
/// Both objects here are made once, with a placeholder entity. ``recordedObject`` is made while
/// its wrappers' declarations are recorded (see `WrapperRecording`): each wrapper holds a token
/// (-2, -3, …) that numbers its place in the order the class initializes its wrappers, and is
/// paired, through `Mirror`, with the property its storage is named after. ``template`` is made
/// replaying that order, each wrapper given the slot of its place, and is checked through
/// `Mirror`: every wrapper must hold the slot of the property its storage is named after.
package final class SlotPlan: @unchecked Sendable {
    // @unchecked Sendable: immutable once made; the objects are only read (their wrappers'
    // storage, through key paths), never changed or used as managed objects.

    /// An object of the class whose wrappers hold recording tokens.
    let recordedObject: AnyObject
    /// An object of the class whose wrappers hold their properties' slots (-1: the entity has no
    /// such property); nil when making it did not give every wrapper its slot.
    package let template: AnyObject?
    /// The slot of each place in the initialization order (-1: no property of the entity).
    package let slotsByPlace: [Int16]

    /// The class the plan is for (what ``EntityDescription/managedObjectClass`` reads, without a
    /// dynamic cast, for the entity's own plan).
    let objectClass: ManagedObject.Type

    /// Makes a plan from its class, recorded object, the slot of each place, and its checked
    /// template.
    init(objectClass: ManagedObject.Type, recordedObject: AnyObject, slotsByPlace: [Int16], template: AnyObject?) {
        self.objectClass = objectClass
        self.recordedObject = recordedObject
        self.slotsByPlace = slotsByPlace
        self.template = template
    }

    /// The slot of the wrapper of ``recordedObject`` that holds `token` (-1: none).
    func slot(forToken token: Int) -> Int {
        let place = -2 - token
        return place >= 0 && place < slotsByPlace.count ? Int(slotsByPlace[place]) : -1
    }
}

extension ManagedObject: EntityObjectClass {
    /// Makes the slot plan of `entity` for objects of this class (see `SlotPlan`).
    package static func prepareObjects(of entity: EntityDescription) throws(ModelError) {
        try entity.prepareSlotPlan()
    }
}
