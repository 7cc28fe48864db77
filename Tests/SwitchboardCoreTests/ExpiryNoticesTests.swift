import XCTest

@testable import SwitchboardCore

final class ExpiryNoticesTests: XCTestCase {
    private let socket = ConnectionID(thread: 0, serial: 1)

    func test_theRecordOfToldPairsIsBoundedAndKeepsLiveSendersFirst() {
        var notices = ExpiryNotices()
        let live = PeerID("live")!
        XCTAssertTrue(notices.shouldTell(live, on: socket, about: "d-live", isCurrent: { _, _ in true }))
        // Senders whose sockets are gone fill the record up to its capacity.
        for index in 1..<ExpiryNotices.capacity {
            _ = notices.shouldTell(PeerID("s\(index)")!, on: socket, about: "d\(index)", isCurrent: { _, _ in false })
        }
        XCTAssertEqual(notices.count, ExpiryNotices.capacity)
        let isCurrent: (PeerID, ConnectionID) -> Bool = { id, _ in id == live }
        XCTAssertTrue(notices.shouldTell(PeerID("next")!, on: socket, about: "d-next", isCurrent: isCurrent))
        XCTAssertEqual(notices.count, 2, "stale pairs dropped; the live sender's pair and the new one kept")
        XCTAssertFalse(notices.shouldTell(live, on: socket, about: "d-live", isCurrent: isCurrent), "still told")
    }
}
