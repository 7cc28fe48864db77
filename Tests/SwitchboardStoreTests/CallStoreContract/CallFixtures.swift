import Foundation
import SwitchboardCore
import XCTest

/// Records and assertions for the call store tests: the contract and the tests of one implementation.
protocol CallFixtures {}

extension CallFixtures {
    /// Whole seconds unless a check says otherwise, so that stored times compare exactly.
    func date(_ offset: Int) -> Date { Date(timeIntervalSince1970: TimeInterval(1_800_000_000 + offset)) }
    func cid(_ text: String) -> CallCID { CallCID(cid: text.contains(":") ? text : "default:" + text)! }
    func user(_ name: String) -> UserID { UserID(name)! }

    func call(_ id: String, at offset: Int = 0, ended: Bool = false, by creator: String = "alice") -> CallRecord {
        CallRecord(
            cid: cid(id), createdBy: user(creator), createdAt: date(offset), endedAt: ended ? date(offset + 60) : nil,
            endedReason: ended ? .endedByUser : nil)
    }

    func member(_ id: String, _ name: String, at offset: Int = 0, state: RingState = .none) -> MemberRecord {
        MemberRecord(cid: cid(id), userID: user(name), addedAt: date(offset), ringState: state)
    }

    func session(_ sid: String, _ id: String, _ name: String, at offset: Int = 0, left: Bool = false) -> SessionRecord {
        SessionRecord(
            sessionID: SessionID(sid), cid: cid(id), callSession: 1, userID: user(name), connection: ClientConnectionID("conn-\(name)"),
            role: .participant, joinedAt: date(offset), leftAt: left ? date(offset + 5) : nil, leftReason: left ? "left" : nil)
    }

    func event(_ id: String, _ index: Int) -> CallEventRecord {
        CallEventRecord(cid: cid(id), callSession: 1, at: date(index), type: "call.test", payload: .object(["n": .number(Double(index))]))
    }

    func connection(_ id: String, _ name: String = "alice", detached: Bool = false) -> ConnectionRecord {
        ConnectionRecord(
            id: ClientConnectionID(id), userID: user(name), resumeToken: "token-\(id)", connectedAt: date(1), tokenExpiresAt: date(3600),
            detachedAt: detached ? date(30) : nil)
    }

    func cids(_ page: CallPage) -> [String] { page.calls.map(\.cid.cid) }

    func assertSwitchboardError<T>(
        _ expected: SwitchboardError, _ expression: @autoclosure () throws -> T, _ message: String = "",
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try expression(), message, file: file, line: line) { error in
            XCTAssertEqual(error as? SwitchboardError, expected, message, file: file, line: line)
        }
    }

    func assertSwitchboardError<T>(
        _ code: SwitchboardError.Code, _ expression: @autoclosure () throws -> T, _ message: String = "",
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try expression(), message, file: file, line: line) { error in
            XCTAssertEqual((error as? SwitchboardError)?.code, code, "\(message) \(error)", file: file, line: line)
        }
    }
}
