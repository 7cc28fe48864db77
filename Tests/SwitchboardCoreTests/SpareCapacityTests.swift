import XCTest

@testable import SwitchboardCore

final class SpareCapacityTests: XCTestCase {
    func test_aLargeTableAQuarterFullShrinksAndKeepsItsEntries() {
        var table: [Int: String] = [:]
        for key in 0..<4096 { table[key] = "v\(key)" }
        for key in 100..<4096 { table[key] = nil }
        let before = table.capacity
        table.releaseSpareCapacity()
        XCTAssertLessThan(table.capacity, before / 8)
        XCTAssertGreaterThanOrEqual(table.capacity, 200, "room for twice what it holds")
        XCTAssertEqual(table.count, 100)
        XCTAssertEqual(table[99], "v99")
    }

    func test_aTableMoreThanAQuarterFullOrSmallIsLeftAlone() {
        var busy: [Int: Int] = [:]
        for key in 0..<4096 { busy[key] = key }
        for key in 0..<2048 { busy[key] = nil }
        let capacity = busy.capacity
        busy.releaseSpareCapacity()
        XCTAssertEqual(busy.capacity, capacity)

        var small: [Int: Int] = [:]
        for key in 0..<500 { small[key] = key }
        small.removeAll(keepingCapacity: true)
        let smallCapacity = small.capacity
        small.releaseSpareCapacity()
        XCTAssertEqual(small.capacity, smallCapacity, "below the threshold, not worth a rebuild")
    }

    func test_setsShrinkToo() {
        var set = Set(0..<5000)
        set.subtract(10..<5000)
        set.releaseSpareCapacity()
        XCTAssertLessThan(set.capacity, 64)
        XCTAssertEqual(set, Set(0..<10))
    }
}
