import Foundation
import Logging
import SwitchboardCore
import SwitchboardSFU
import XCTest

/// The room reconciler against an in-memory Janus: what the calls want, and nothing else of
/// Switchboard's, whatever Janus held before.
final class JanusRoomReconcilerTests: XCTestCase {
    private let keys = SFURoomKeys(key: Array("0123456789abcdef0123456789abcdef".utf8))!
    private var janus: FakeJanus!
    private var wanted: Wanted!
    private let target = SFUPollTarget(id: SFUID("janus-a")!, janus: JanusAccess(adminURL: "http://janus-a.test/admin", adminSecret: .environment("S")))

    override func setUp() {
        janus = FakeJanus(url: "http://janus-a.test/admin", adminSecret: "admin-secret")
        wanted = Wanted()
    }

    private func reconciler() -> JanusRoomReconciler {
        JanusRoomReconciler(
            targets: { [target] in [target] }, desired: { [wanted] in wanted!.unknown ? nil : wanted!.rooms }, keys: keys,
            janus: JanusAdminClient(http: janus, timeout: .seconds(1)), secrets: SecretReader(environment: { $0 == "S" ? "admin-secret" : nil }),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    private func room(_ call: String, sessions: [String], publishers: Int = 4) -> DesiredRoom {
        DesiredRoom(room: keys.roomID(call: call, sfu: target.id), call: call, publishers: publishers, sessions: sessions.map { SessionID($0) })
    }

    private func token(_ call: String, _ session: String) -> String { keys.token(room: keys.roomID(call: call, sfu: target.id), session: SessionID(session)) }

    func test_aCallsRoomIsCreatedWithItsSecretPINSizeAndTokensAndAQuietRunChangesNothing() async throws {
        let standup = room("default:standup", sessions: ["s1", "s2"], publishers: 10)
        wanted.rooms = [target.id: [standup]]
        let sync = reconciler()
        let report = try await sync.reconcile(target, rooms: [standup])
        XCTAssertEqual(report.roomsCreated, 1)
        XCTAssertEqual(report.tokensAdded, 2)
        let state = janus.state
        let created = try XCTUnwrap(state.rooms[standup.room])
        XCTAssertEqual(created.secret, keys.roomSecret(standup.room))
        XCTAssertEqual(created.pin, keys.roomPIN(standup.room))
        XCTAssertEqual(created.publishers, 10)
        XCTAssertEqual(created.description, "switchboard default:standup")
        XCTAssertEqual(created.allowed, [token("default:standup", "s1"), token("default:standup", "s2")])
        XCTAssertEqual(state.tokens, created.allowed)

        _ = janus.takeVerbs()
        let again = try await sync.reconcile(target, rooms: [standup])
        XCTAssertEqual(again, RoomReconciliation())
        XCTAssertEqual(janus.takeVerbs(), ["list_tokens", "list"], "an unchanged room costs no request of its own")
    }

    func test_aSessionThatLeftLosesItsTokenItsPlaceInTheRoomAndItsJanusSession() async throws {
        let sync = reconciler()
        _ = try await sync.reconcile(target, rooms: [room("default:standup", sessions: ["s1", "s2"])])
        janus.addSession(9001, token: token("default:standup", "s2"))
        janus.addSession(9002, token: token("default:standup", "s1"))
        let report = try await sync.reconcile(target, rooms: [room("default:standup", sessions: ["s1"])])
        XCTAssertEqual(report.tokensRevoked, 1)
        XCTAssertEqual(report.sessionsEvicted, 1)
        XCTAssertEqual(report.allowedListsChanged, 1)
        let state = janus.state
        XCTAssertEqual(state.tokens, [token("default:standup", "s1")])
        XCTAssertEqual(state.sessions.keys.sorted(), [9002], "only the revoked token's Janus session is ended")
        XCTAssertEqual(state.rooms.values.first?.allowed, [token("default:standup", "s1")])
    }

    func test_endedCallsRoomsAndOrphansGoButAnOperatorsRoomsAndTokensStay() async throws {
        let sync = reconciler()
        _ = try await sync.reconcile(target, rooms: [room("default:a", sessions: ["s1"]), room("default:b", sessions: ["s2"])])
        let orphan = keys.roomID(call: "default:never-committed", sfu: target.id)
        janus.setRoom(orphan, .init(secret: keys.roomSecret(orphan), description: "switchboard default:never-committed", publishers: 3, allowed: []))
        janus.setRoom(42, .init(secret: "theirs", description: "operator's room", publishers: 3, allowed: []))
        janus.setRoom(43, .init(secret: "not-derived", description: "switchboard lookalike", publishers: 3, allowed: []))
        janus.addToken("operator-token")

        let report = try await sync.reconcile(target, rooms: [room("default:a", sessions: ["s1"])])
        XCTAssertEqual(report.roomsDestroyed, 1, "default:b ended")
        XCTAssertEqual(report.orphansDestroyed, 1)
        XCTAssertEqual(report.tokensRevoked, 1)
        let state = janus.state
        XCTAssertEqual(Set(state.rooms.keys), [keys.roomID(call: "default:a", sfu: target.id), 42, 43], "a room that refuses the derived secret is left alone")
        XCTAssertEqual(state.tokens, [token("default:a", "s1"), "operator-token"])
    }

    /// When what the calls want cannot be read (the store is away), a run touches no Janus:
    /// no room goes for want of a read.
    func test_aRunWithNothingKnownOfTheCallsLeavesEveryRoom() async throws {
        wanted.rooms = [target.id: [room("default:a", sessions: ["s1"])]]
        let sync = reconciler()
        let first = await sync.reconcileAll()
        XCTAssertEqual(try first[target.id]?.get().roomsCreated, 1)
        _ = janus.takeVerbs()

        wanted.unknown = true
        let skipped = await sync.reconcileAll()
        XCTAssertTrue(skipped.isEmpty)
        XCTAssertEqual(janus.takeVerbs(), [])
        XCTAssertEqual(Set(janus.state.rooms.keys), [keys.roomID(call: "default:a", sfu: target.id)])
        XCTAssertEqual(janus.state.tokens, [token("default:a", "s1")])
    }

    func test_aRestartedJanusGetsEverythingBackAndAnUnreachableOneFailsAlone() async throws {
        wanted.rooms = [target.id: [room("default:a", sessions: ["s1", "s2"])]]
        let sync = reconciler()
        _ = await sync.reconcileAll()
        janus.restart()
        let results = await sync.reconcileAll()
        XCTAssertEqual(try results[target.id]?.get().roomsCreated, 1)
        XCTAssertEqual(janus.state.tokens.count, 2)

        janus.down = true
        let failed = await sync.reconcileAll()
        guard case .failure(.failed) = failed[target.id] else { return XCTFail("\(String(describing: failed[target.id]))") }
    }
}

/// Janus servers are reconciled on their own: one that hangs does not hold up another's kicks.
final class JanusRoomReconcilerIndependenceTests: XCTestCase {
    func test_aHangingJanusDoesNotHoldUpTheOthersRuns() async throws {
        let keys = SFURoomKeys(key: Array(repeating: 4, count: 32))!
        let fake = FakeJanus(url: "http://ok.test/admin", adminSecret: "s")
        let http = Routing(fake: fake, hungURL: "http://hung.test/admin")
        let ok = SFUPollTarget(id: SFUID("ok")!, janus: JanusAccess(adminURL: "http://ok.test/admin", adminSecret: .environment("S")))
        let hung = SFUPollTarget(id: SFUID("hung")!, janus: JanusAccess(adminURL: "http://hung.test/admin", adminSecret: .environment("S")))
        let wanted = Wanted()
        func room(_ call: String) -> DesiredRoom {
            DesiredRoom(room: keys.roomID(call: call, sfu: ok.id), call: call, publishers: 4, sessions: [SessionID("s1")])
        }
        wanted.rooms = [ok.id: [room("default:a")]]
        let sync = JanusRoomReconciler(
            targets: { [ok, hung] }, desired: { wanted.rooms }, keys: keys,
            janus: JanusAdminClient(http: http, timeout: .seconds(3600)), secrets: SecretReader(environment: { _ in "s" }),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        sync.start(interval: .seconds(3600))
        defer { sync.stop() }
        try await waitUntil { fake.state.rooms.count == 1 }
        wanted.rooms = [ok.id: [room("default:a"), room("default:b")]]
        sync.kick()
        try await waitUntil { fake.state.rooms.count == 2 }
        XCTAssertEqual(http.hungRequests, 1, "the hung Janus has its one run under way, and no second")
    }

    private func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while !condition() {
            guard ContinuousClock.now < deadline else { return XCTFail("not within 20 s") }
            try await Task.sleep(for: .milliseconds(5))  // a polling cadence, not a wait for an outcome
        }
    }
}

/// `hungURL` never answers (until cancelled); everything else goes to the fake Janus.
private final class Routing: HTTPPoster, @unchecked Sendable {
    let fake: FakeJanus
    let hungURL: String
    private let lock = NSLock()
    private var hung = 0
    var hungRequests: Int { lock.withLock { hung } }

    init(fake: FakeJanus, hungURL: String) {
        self.fake = fake
        self.hungURL = hungURL
    }

    func post(_ url: String, body: [UInt8], timeout: Duration) async throws(HTTPPostError) -> (status: Int, body: [UInt8]) {
        guard url.hasPrefix(hungURL) else { return try await fake.post(url, body: body, timeout: timeout) }
        lock.withLock { hung += 1 }
        try? await Task.sleep(for: .seconds(3600))
        throw .timeout
    }
}

final class Wanted: @unchecked Sendable {
    private let lock = NSLock()
    private var value: [SFUID: [DesiredRoom]] = [:]
    private var unknownValue = false
    /// Whether what the rooms should hold cannot be read now (the store is away).
    var unknown: Bool {
        get { lock.withLock { unknownValue } }
        set { lock.withLock { unknownValue = newValue } }
    }
    var rooms: [SFUID: [DesiredRoom]] {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}
