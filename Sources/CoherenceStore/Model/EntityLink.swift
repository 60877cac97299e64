/// A reference from one description of a model to an entity of the same model that does not
/// keep the entity alive.
///
/// A model owns its entities and each entity owns its properties; the references that point
/// back or across (a property's entity, a relationship's destination and inverse, an entity's
/// sub-entities) are links, so that a model and everything in it is released with its last
/// user. A strong reference there would make a cycle (`Person.town` → `Town`,
/// `Town.people` → `Person`) that keeps every model ever loaded in memory. A weak reference
/// to each entity would give every entity a side table, and every retain and release of an
/// entity (each object and object ID holds its entity) would take the runtime's slow path; a
/// link is the entity's number in the model, resolved through a weak reference to the model
/// (one side table, on the model).
///
/// While the model loads, a link holds its entity strongly (``loading``); the model's
/// initializer then publishes it (``publish(in:)``: the entity's number) or, if loading fails,
/// drops it (``abandon()``). The description that holds a link keeps one weak reference to its
/// model and resolves its links through it: a published link resolves to nil once the model is
/// gone (an object or ID can outlive the model that made its entity). A link is two words and
/// copies without reference counting once published.
struct EntityLink {
    /// The entity, while the model loads.
    private(set) var loading: EntityDescription?
    /// The entity's number in its model (1-based; 0 before publishing).
    private var number = 0

    /// A link that holds `entity` until the model publishes it.
    init(loading entity: EntityDescription?) {
        self.loading = entity
    }

    /// The entity in `model` (the holder's weak reference, loaded once by the caller): nil
    /// before it is set, and once the model is gone.
    /// - Complexity: O(1): an array read.
    @inline(__always)
    func entity(in model: ManagedObjectModel?) -> EntityDescription? {
        if let loading { return loading }
        guard let model else { return nil }
        let entities = model.entities
        return number > 0 && number <= entities.count ? entities[number - 1] : nil
    }

    /// Replaces the strong reference by the entity's number, once `model` has numbered its
    /// entities. A link to an entity of another model (which loading never makes) is dropped.
    mutating func publish(in model: ManagedObjectModel) {
        guard let e = loading else { return }
        loading = nil
        guard e.managedObjectModel === model else { return }
        number = e.entityNumber
    }

    /// Drops the strong reference (the model failed to load).
    mutating func abandon() {
        loading = nil
    }
}
