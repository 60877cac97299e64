import Coherence
import Foundation

// A background import through a dual-coordinator container: an importer context writes batches
// of products through the writer coordinator while a fetched-results controller on the view
// context prints the changes it reports after each merge.

final class Product: ManagedObject {
    @Attribute var sku: String = ""
    @Attribute var name: String = ""
    @Attribute var price: Double = 0
}

/// Prints each change the controller reports.
final class ChangePrinter: FetchedResultsControllerDelegate {
    func controller(_ controller: FetchedResultsController<Product>, didChangeContentWith snapshot: FetchedResultsSnapshot) {
        let d = snapshot.difference
        guard !d.isEmpty else { return }
        print(
            "  controller: +\(d.insertedIndexPaths.count) -\(d.deletedIndexPaths.count) moved \(d.movedIndexPaths.count) updated \(d.updatedIndexPaths.count) → \(snapshot.numberOfObjects) cheap products"
        )
    }
}

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coherence-import-\(UUID().uuidString)")
defer { try? FileManager.default.removeItem(at: directory) }

let model = try ManagedObjectModel(types: [Product.self])
let container = try DualCoordinatorContainer(
    managedObjectModel: model, storeURL: directory.appendingPathComponent("Import.sqlite"))
let view = container.viewContext

// The list: products under 10, by name, on the view context.
let controller = FetchedResultsController(
    fetchRequest: FetchRequest<Product>(predicate: #Predicate { $0.price < 10 }, sortBy: [SortDescriptor(\.name)]),
    managedObjectContext: view)
let printer = ChangePrinter()
// Top-level code runs on the main thread, the view context's executor.
try controller.performFetch()
controller.delegate = printer
print("The view context shows \(controller.fetchedObjects.count) cheap products.")

// The import: three batches of 1,000 products, each saved through the writer coordinator.
for batch in 0..<3 {
    let importer = container.importerContext()
    try await importer.perform {
        for i in 0..<1_000 {
            let n = batch * 1_000 + i
            let product = Product(context: importer)
            product.sku = "P\(n)"
            product.name = "Product \(String(format: "%04d", n))"
            product.price = Double(n % 50)
        }
        try importer.save()
    }
    print("Imported batch \(batch + 1) (1,000 products).")
    await view.perform(schedule: .enqueued) {}  // the merge queued by the save has run
}

// A price update: some products become expensive, some cheap ones are renamed, some deleted.
let importer = container.importerContext()
try await importer.perform {
    let cheap = try Product.fetch(in: importer, predicate: #Predicate { $0.price < 10 }, sortedWith: [SortDescriptor(\.sku)])
    for (i, product) in cheap.prefix(30).enumerated() {
        switch i % 3 {
        case 0: product.price = 99
        case 1: product.name = "A renamed " + product.name
        default: importer.delete(product)
        }
    }
    try importer.save()
}
print("Updated 30 products.")
await view.perform(schedule: .enqueued) {}

// The view context held only what the list shows: the other products were never loaded there.
let (shown, registered) = (controller.fetchedObjects.count, view.registeredObjects.count)
print("The list shows \(shown) products; the view context holds \(registered) objects of 2,990 in the store.")

// A temporary context never writes.
let scratch = container.temporaryContext()
let refused = scratch.performAndWait { () -> String in
    Product(context: scratch).name = "Draft"
    do throws(CoherenceError) {
        try scratch.save()
        return "saved (unexpected)"
    } catch {
        return "refused: \(error.code)"
    }
}
print("A temporary context's save was \(refused).")
