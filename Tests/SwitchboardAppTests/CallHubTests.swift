import Foundation
import Logging
import SwitchboardApp
import SwitchboardCore
import SwitchboardTesting
import XCTest

/// A token verifier for tests: the token is the user id; `expired` and `bad` fail.
private struct NameVerifier: TokenVerifier {
    let expiresAt: Date
    func verify(_ token: String) async throws(SwitchboardError) -> UserToken {
        if token == "expired" { throw SwitchboardError(.tokenExpired, "expired") }
        if token == "bad" { throw SwitchboardError(.tokenInvalid, "bad signature") }
        return UserToken(userID: token, issuedAt: expiresAt.addingTimeInterval(-3600), expiresAt: expiresAt)
    }
}

/// A verifier that answers (the token is the user id) only once the test opens its gate.
private final class GatedVerifier: TokenVerifier, @unchecked Sendable {
    let expiresAt: Date
    let gate = DispatchSemaphore(value: 0)
    init(expiresAt: Date) { self.expiresAt = expiresAt }
    func verify(_ token: String) async throws(SwitchboardError) -> UserToken {
        await withCheckedContinuation { done in
            DispatchQueue.global().async {
                self.gate.wait()
                done.resume()
            }
        }
        return UserToken(userID: token, issuedAt: expiresAt.addingTimeInterval(-3600), expiresAt: expiresAt)
    }
}


/// Sequential ids, shared by every hub of a test (a restarted hub must not reuse ids).
private final class IDCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var last = 0
    func next() -> String { lock.withLock { last += 1; return "id-\(last)" } }
}

/// A wall clock tests move by hand.
private final class HandClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current = Date(timeIntervalSince1970: 1_800_000_000)
    var now: Date { lock.withLock { current } }
    func advance(_ seconds: TimeInterval) { lock.withLock { current += seconds } }
}

/// The call hub over the in-memory store and transport: commits before it speaks, one commit
/// per batch, rollback to the store's truth, rebuild at start.
final class CallHubTests: XCTestCase {
    private let store = InMemoryCallStore()
    private let transport = InMemoryTransport()
    private let clock = HandClock()
    private var serial = 0
    private let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    private let ids = IDCounter()

    private func makeHub(verifier: (any TokenVerifier)? = nil) throws -> CallHub {
        let clock = self.clock
        let ids = self.ids
        let hub = CallHub(
            queue: DispatchQueue(label: "test.calls"), configuration: CallConfiguration(), store: store, placement: FixedPlacement(),
            tokenVerifier: verifier ?? NameVerifier(expiresAt: clock.now.addingTimeInterval(3600)), wallClock: { clock.now },
            newID: { ids.next() }, logger: logger)
        try hub.start(transport: transport)
        return hub
    }

    private func socket() -> ConnectionID {
        serial += 1
        return ConnectionID(thread: 0, serial: UInt64(serial))
    }

    /// Feeds events as one batch, as the signaling hub does.
    private func feed(_ hub: CallHub, _ events: [TransportEvent]) {
        hub.queue.sync { hub.receive(events) }
    }

    /// Opens an authenticated socket for `user`; returns it once `connection.ok` went out.
    private func connect(_ hub: CallHub, _ user: String) -> ConnectionID {
        let id = socket()
        let before = transport.commands.count
        feed(hub, [.opened(id, WebSocketUpgrade(path: "/v1/connect", query: ["token": user]))])
        let sent = transport.waitForCommands(count: before + 1)
        XCTAssertTrue(frames(sent, to: id).contains { $0["type"] as? String == "connection.ok" }, "no connection.ok for \(user)")
        return id
    }

    private func frames(_ commands: [OutboundCommand], to socket: ConnectionID) -> [[String: Any]] {
        commands.compactMap { command in
            guard case .send(let target, let bytes) = command, target == socket else { return nil }
            return try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        }
    }

    private func message(_ socket: ConnectionID, _ text: String) -> TransportEvent {
        .message(socket, Array(text.utf8), isBinary: false)
    }

    func test_aFailedCommitAnswersUnavailableSendsNoEventAndLeavesStateAsTheStoreHasIt() throws {
        let hub = try makeHub()
        let alice = connect(hub, "alice")
        let bob = connect(hub, "bob")
        feed(hub, [message(alice, #"{"id":1,"type":"call.join","data":{"type":"default","id":"m","create":true}}"#)])
        _ = transport.drain()
        store.failNextApply = true
        feed(hub, [message(bob, #"{"id":2,"type":"call.join","data":{"type":"default","id":"m"}}"#)])
        let sent = transport.drain()
        let answer = try XCTUnwrap(frames(sent, to: bob).first)
        XCTAssertEqual(answer["type"] as? String, "error")
        XCTAssertEqual((answer["error"] as? [String: Any])?["code"] as? String, "unavailable")
        XCTAssertTrue(frames(sent, to: alice).isEmpty, "alice must not hear of a join that was not committed")
        let participants = hub.withGateway { $0.engine.call(CallCID(type: "default", id: "m")!)?.sessions.count }
        XCTAssertEqual(participants, 1, "the rolled-back session is gone from memory")
        XCTAssertEqual(try store.loadLiveState().sessions.count, 1)

        feed(hub, [message(bob, #"{"id":3,"type":"call.join","data":{"type":"default","id":"m"}}"#)])
        let retry = transport.drain()
        XCTAssertEqual(frames(retry, to: bob).first?["type"] as? String, "response")
        let joined = try XCTUnwrap(frames(retry, to: alice).first)
        XCTAssertEqual(joined["type"] as? String, "call.participant_joined")
        XCTAssertEqual(joined["seq"] as? Int, 1, "the seq taken back by the rollback is used again")
    }

    /// A commit fails and the store cannot be read to roll back (its server is away): memory may
    /// be ahead of the store, so every request is refused `unavailable` until the store can be
    /// read again, which rebuilds the calls from it. Before, a retry was answered from memory as
    /// if the refused call existed.
    func test_whileTheStoreCanBeNeitherWrittenNorReadRequestsAreRefusedThenCallsAreRebuiltFromIt() throws {
        let hub = try makeHub()
        let alice = connect(hub, "alice")
        _ = transport.drain()
        let commits = store.applyCount
        store.failAllApplies = true
        store.failAllReads = true
        let create = #"{"id":1,"type":"call.get_or_create","data":{"type":"ringing","id":"x2","members":["bob"],"ring":true}}"#
        for request in [create, create.replacingOccurrences(of: #""id":1"#, with: #""id":2"#), #"{"id":3,"type":"call.get","data":{"type":"ringing","id":"x2"}}"#] {
            feed(hub, [message(alice, request)])
            let answer = try XCTUnwrap(frames(transport.drain(), to: alice).first, request)
            XCTAssertEqual(answer["type"] as? String, "error", request)
            XCTAssertEqual((answer["error"] as? [String: Any])?["code"] as? String, "unavailable", request)
        }
        XCTAssertEqual(store.applyCount, commits)

        store.failAllApplies = false
        store.failAllReads = false
        feed(hub, [message(alice, #"{"id":4,"type":"call.get","data":{"type":"ringing","id":"x2"}}"#)])
        let missing = try XCTUnwrap(frames(transport.drain(), to: alice).first)
        XCTAssertEqual((missing["error"] as? [String: Any])?["code"] as? String, "call_not_found", "the refused call never existed")
        feed(hub, [message(alice, create.replacingOccurrences(of: #""id":1"#, with: #""id":5"#))])
        let created = try XCTUnwrap(frames(transport.drain(), to: alice).first)
        XCTAssertEqual(created["type"] as? String, "response")
        XCTAssertEqual((created["data"] as? [String: Any])?["created"] as? Bool, true)
        XCTAssertEqual(try store.loadLiveState().members.map(\.userID.rawValue).sorted(), ["alice", "bob"], "stored whole")
    }

    func test_oneBatchOfRequestsIsOneCommit() throws {
        let hub = try makeHub()
        let sockets = ["a", "b", "c", "d"].map { connect(hub, $0) }
        let commits = store.applyCount
        feed(hub, sockets.map { message($0, #"{"id":1,"type":"call.join","data":{"type":"default","id":"g","create":true}}"#) })
        XCTAssertEqual(store.applyCount, commits + 1, "four joins in one batch: one transaction")
        XCTAssertEqual(try store.loadLiveState().sessions.count, 4)
    }

    func test_eventsQueuedWhileTheHubIsBusyAreOneBatchWithOneCommit() throws {
        let hub = try makeHub()
        let sockets = ["a", "b", "c", "d", "e"].map { connect(hub, $0) }
        let commits = store.applyCount
        let gate = DispatchSemaphore(value: 0)
        hub.queue.async { gate.wait() }  // busy, as during a commit
        for (index, socket) in sockets.enumerated() {
            hub.enqueue([message(socket, #"{"id":\#(index),"type":"call.join","data":{"type":"default","id":"g","create":true}}"#)])
        }
        let before = transport.commands.count
        gate.signal()
        let sent = transport.waitForCommands(count: before + sockets.count)
        XCTAssertEqual(store.applyCount, commits + 1, "five joins queued behind a busy hub: one transaction")
        XCTAssertEqual(try store.loadLiveState().sessions.count, 5)
        for socket in sockets {
            XCTAssertEqual(frames(sent, to: socket).first { $0["type"] as? String == "response" }?["type"] as? String, "response")
        }
    }

    func test_aRestartRebuildsLiveCallsAndSessionsLeaveWhenTheirResumeWindowPasses() throws {
        let first = try makeHub()
        let alice = connect(first, "alice")
        feed(first, [message(alice, #"{"id":1,"type":"call.get_or_create","data":{"type":"ringing","id":"r","members":["bob"],"ring":true}}"#)])
        feed(first, [message(alice, #"{"id":2,"type":"call.join","data":{"type":"ringing","id":"r"}}"#)])
        first.stop()

        let second = try makeHub()
        let restored = second.withGateway { $0.engine.call(CallCID(type: "ringing", id: "r")!) }
        XCTAssertEqual(restored?.ringingMembers.map(\.rawValue), ["bob"])
        XCTAssertEqual(restored?.sessions.count, 1)
        XCTAssertEqual(second.withGateway { $0.clients.values.filter { $0.socket == nil }.count }, 1, "alice's connection waits for a resume")

        _ = transport.drain()
        let bob = connect(second, "bob")
        XCTAssertTrue(frames(transport.commands, to: bob).contains { $0["type"] as? String == "call.ring" }, "bob is rung when he connects")

        clock.advance(CallConfiguration().resumeWindow.seconds + 1)
        second.tickNow()
        let sessions = try XCTUnwrap(store.callDetail(CallCID(type: "ringing", id: "r")!, eventLimit: 10)).sessions
        XCTAssertEqual(sessions.first?.leftReason, "connection_lost")
        let call = try XCTUnwrap(store.loadCall(CallCID(type: "ringing", id: "r")!)).call
        XCTAssertEqual(call.endedReason, .initiatorLeft, "the initiator's session left, so the ringing call ended")
    }

    /// Frames pipelined behind the auth frame wait for the token check; when they run, the calls
    /// they touch are loaded from the store first, as for any other frame. (Loaded only when
    /// they arrived, an ended call was evicted again by a tick while the check ran, and the
    /// queued join read `call_not_found`.)
    func test_framesPipelinedBehindAuthSeeCallsThatAreOnlyInTheStore() throws {
        let first = try makeHub()
        let alice = connect(first, "alice")
        feed(first, [message(alice, #"{"id":1,"type":"call.join","data":{"type":"default","id":"kept","create":true}}"#)])
        feed(first, [message(alice, #"{"id":2,"type":"call.end","data":{"type":"default","id":"kept"}}"#)])
        first.stop()
        XCTAssertNotNil(try store.loadCall(CallCID(type: "default", id: "kept")!), "the ended call is in the store")

        clock.advance(CallEngine.endedRetention + 1)
        let verifier = GatedVerifier(expiresAt: clock.now.addingTimeInterval(3600))
        let second = try makeHub(verifier: verifier)
        XCTAssertNil(second.withGateway { $0.engine.call(CallCID(type: "default", id: "kept")!) }, "ended calls are not restored")
        _ = transport.drain()
        let bob = socket()
        feed(second, [
            .opened(bob, WebSocketUpgrade(path: "/v1/connect")),
            message(bob, #"{"id":"a","type":"auth","token":"bob"}"#),
            message(bob, #"{"id":"j","type":"call.join","data":{"type":"default","id":"kept"}}"#),
        ])
        second.tickNow()  // while the token check runs
        verifier.gate.signal()
        let sent = transport.waitForCommands(count: 2)
        let answer = try XCTUnwrap(frames(sent, to: bob).first { $0["id"] as? String == "j" })
        XCTAssertNil(answer["error"], "not call_not_found: \(answer)")
        let call = try XCTUnwrap((answer["data"] as? [String: Any])?["call"] as? [String: Any])
        XCTAssertEqual(call["session"] as? Int, 2, "the ended call was reopened, not made anew")
        XCTAssertEqual(call["created_by"] as? String, "alice")
    }
}
