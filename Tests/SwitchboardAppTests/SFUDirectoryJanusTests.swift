import Foundation
import Logging
import SwitchboardApp
import SwitchboardCore
import SwitchboardTesting
import XCTest

/// Janus SFUs in the location table: their definition rules, and health and load pulled by polls.
final class SFUDirectoryJanusTests: XCTestCase {
    private var store: InMemorySFUStore!
    private var clock: ManualClock!
    private var directory: SFUDirectory!
    private let wallNow = Date(timeIntervalSince1970: 1_800_000_000)

    override func setUp() {
        store = InMemorySFUStore()
        clock = ManualClock()
        directory = try! SFUDirectory(
            store: store, policy: PlacementPolicy(staleAfter: .seconds(10)),
            resolver: LocationResolver(regions: RegionTable.builtin.points, fallback: RegionTable.builtin.point(of: "fra")!),
            clock: clock, wallClock: { [wallNow] in wallNow }, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    private func janus(_ id: String, region: String = "fra", env: String? = "JANUS_SECRET", file: String? = nil, secret: String? = nil) -> SFUDefinition {
        SFUDefinition(
            id: id, url: "ws://\(id).test:8188/", region: region, capacity: 50, secret: secret, kind: "janus",
            janus: JanusDefinition(adminURL: "http://\(id).test:7088/admin", adminSecretEnv: env, adminSecretFile: file))
    }

    private func ok(_ load: Int) -> SFUPollResult { SFUPollResult(outcome: .ok, load: load, at: wallNow) }

    func test_aJanusSFUIsStoredWithItsSecretsSourceAndShownWithKindAndLoadSource() throws {
        let view = try directory.create(janus("janus-a"))
        XCTAssertEqual(view.kind, "janus")
        XCTAssertEqual(view.loadSource, "poll")
        XCTAssertEqual(view.janus, SFUView.JanusView(adminUrl: "http://janus-a.test:7088/admin", adminSecretFrom: "env:JANUS_SECRET"))
        XCTAssertFalse(view.hasSecret)
        XCTAssertEqual(try store.allSFUs().first?.janus, JanusAccess(adminURL: "http://janus-a.test:7088/admin", adminSecret: .environment("JANUS_SECRET")))
        XCTAssertEqual(directory.pollTargets().map(\.id.rawValue), ["janus-a"])
        let heartbeat = try directory.create(SFUDefinition(id: "hb", url: "wss://hb.test/ws", region: "fra", capacity: 5))
        XCTAssertEqual(heartbeat.kind, "heartbeat")
        XCTAssertEqual(heartbeat.loadSource, "heartbeat")
        XCTAssertEqual(directory.pollTargets().map(\.id.rawValue), ["janus-a"], "heartbeat SFUs are not polled")
    }

    func test_badJanusDefinitionsAreRefusedNamingTheField() {
        let cases: [(SFUDefinition, String)] = [
            (SFUDefinition(id: "x", url: "ws://x.test/", region: "fra", capacity: 5, kind: "mediasoup"), "kind must be heartbeat or janus"),
            (SFUDefinition(id: "x", url: "ws://x.test/", region: "fra", capacity: 5, kind: "janus"), "a janus SFU needs janus"),
            (janus("x", env: nil), "exactly one of admin_secret_env and admin_secret_file"),
            (janus("x", env: "A", file: "/run/secret"), "exactly one of admin_secret_env and admin_secret_file"),
            (janus("x", env: "NOT A NAME"), "janus.admin_secret_env must be an environment variable name"),
            (janus("x", env: nil, file: "relative/path"), "janus.admin_secret_file must be an absolute path"),
            (janus("x", secret: "a-heartbeat-secret-long-enough"), "secret is for heartbeat SFUs"),
            (
                SFUDefinition(
                    id: "x", url: "ws://x.test/", region: "fra", capacity: 5, kind: "janus",
                    janus: JanusDefinition(adminURL: "ftp://x.test/admin", adminSecretEnv: "S")), "janus.admin_url must be an http"
            ),
            (
                SFUDefinition(id: "x", url: "ftp://x.test/", region: "fra", capacity: 5, kind: "janus", janus: JanusDefinition(adminURL: "http://x/admin", adminSecretEnv: "S")),
                "url must be the Janus API's"
            ),
            (
                SFUDefinition(id: "x", url: "http://x.test/", region: "fra", capacity: 5, janus: JanusDefinition(adminURL: "http://x/admin", adminSecretEnv: "S")),
                "url must be a ws:// or wss:// URL"
            ),
            (
                SFUDefinition(id: "x", url: "ws://x.test/", region: "fra", capacity: 5, janus: JanusDefinition(adminURL: "http://x/admin", adminSecretEnv: "S")),
                "janus is only for SFUs of kind janus"
            ),
        ]
        for (definition, message) in cases {
            XCTAssertThrowsError(try directory.create(definition), message) { error in
                let error = error as? SwitchboardError
                XCTAssertEqual(error?.code, .invalidRequest)
                XCTAssertTrue(error?.message.contains(message) ?? false, "\(error?.message ?? "") should say \(message)")
            }
        }
        XCTAssertEqual(try store.allSFUs(), [], "nothing refused was stored")
    }

    func test_aPolledAnswerIsAHeartbeatAndAFailedPollOnlyRecordsItsOutcome() throws {
        _ = try directory.create(janus("janus-a"))
        let target = try XCTUnwrap(directory.pollTargets().first)
        XCTAssertFalse(try XCTUnwrap(directory.get(target.id)).fresh, "not fresh before its first answer")

        directory.polled(target, ok(7))
        directory.settle()
        var view = try XCTUnwrap(directory.get(target.id))
        XCTAssertTrue(view.fresh)
        XCTAssertEqual(view.load, 7)
        XCTAssertEqual(view.lastPollOutcome, "ok")
        XCTAssertEqual(view.lastHeartbeatAt, wallNow)
        XCTAssertEqual(try store.allSFUs().first?.reportedLoad, 7, "a polled load is stored like a heartbeat's")

        clock.advance(by: .seconds(6))
        directory.polled(target, SFUPollResult(outcome: .timeout, at: wallNow.addingTimeInterval(6), detail: "no answer"))
        directory.settle()
        view = try XCTUnwrap(directory.get(target.id))
        XCTAssertEqual(view.lastPollOutcome, "timeout")
        XCTAssertEqual(view.load, 7, "a failed poll keeps the last known load")
        XCTAssertTrue(view.fresh, "still within stale_after of the last answer")
    }

    func test_aJanusThatStopsAnsweringGoesDownAfterStaleAfterItsCallsMoveAndAnAnswerBringsItBack() throws {
        _ = try directory.create(janus("janus-a", region: "fra"))
        _ = try directory.create(janus("janus-b", region: "ams"))
        let targets = directory.pollTargets()
        for target in targets { directory.polled(target, ok(0)) }
        directory.settle()
        let placed = try directory.place(callID: "c1", participants: [LocationHint(region: "fra")], commit: store.commit)
        XCTAssertEqual(placed.sfu.rawValue, "janus-a")

        clock.advance(by: .seconds(6))
        directory.polled(targets[1], ok(2))
        directory.polled(targets[0], SFUPollResult(outcome: .failed, at: wallNow, detail: "connection refused"))
        directory.settle()
        XCTAssertEqual(directory.checkHealth(), [])
        clock.advance(by: .seconds(5))
        XCTAssertEqual(directory.checkHealth(), [Reassignment(callID: "c1", from: SFUID("janus-a")!, to: SFUID("janus-b")!)])
        XCTAssertEqual(directory.get(SFUID("janus-a")!)?.state, "down")

        directory.polled(targets[0], ok(0))
        directory.settle()
        XCTAssertEqual(directory.get(SFUID("janus-a")!)?.state, "active", "an answer brings a down Janus back")
    }

    func test_heartbeatsForAJanusSFUAreRefusedAndAPollForARedefinedSFUIsDropped() throws {
        _ = try directory.create(janus("janus-a"))
        XCTAssertThrowsError(try directory.heartbeat(SFUID("janus-a")!, load: 1, credential: nil, isAdmin: true)) { error in
            XCTAssertEqual((error as? SwitchboardError)?.code, .conflict)
        }
        let stale = try XCTUnwrap(directory.pollTargets().first)
        _ = try directory.replace(SFUID("janus-a")!, with: janus("janus-a", env: "OTHER_SECRET"))
        directory.polled(stale, ok(9))
        directory.settle()
        XCTAssertEqual(directory.get(SFUID("janus-a")!)?.load, 0, "a result for the old definition is not applied")
        XCTAssertNil(directory.get(SFUID("janus-a")!)?.lastPollOutcome)
    }

    func test_aPlacedJanusCallTellsTheClientTheKind() throws {
        _ = try directory.create(janus("janus-a"))
        directory.polled(try XCTUnwrap(directory.pollTargets().first), ok(0))
        directory.settle()
        var out = CallOutput()
        let assignment = try directory.table().place(
            CallCID(type: "default", id: "k1")!, participants: [LocationHint(region: "fra")], current: nil, now: wallNow, out: &out)
        XCTAssertEqual(assignment, SFUAssignment(id: "janus-a", kind: .janus, url: "ws://janus-a.test:8188/", region: "fra"))
    }

    func test_theStoreRecordsTheRoomOfACallOnAJanusAndTheNewRoomAfterAFailover() throws {
        let keys = SFURoomKeys(key: Array(repeating: 5, count: 32))!
        directory = try SFUDirectory(
            store: store, policy: PlacementPolicy(staleAfter: .seconds(10)),
            resolver: LocationResolver(regions: RegionTable.builtin.points, fallback: RegionTable.builtin.point(of: "fra")!),
            clock: clock, wallClock: { [wallNow] in wallNow }, roomKeys: keys, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        _ = try directory.create(janus("janus-a", region: "fra"))
        _ = try directory.create(janus("janus-b", region: "ams"))
        for target in directory.pollTargets() { directory.polled(target, ok(0)) }
        directory.settle()
        let placed = try directory.place(callID: "default:c1", participants: [LocationHint(region: "fra")], commit: store.commit)
        XCTAssertEqual(placed.room, keys.roomID(call: "default:c1", sfu: SFUID("janus-a")!))
        XCTAssertEqual(try store.allPlacements().first?.room, placed.room)

        clock.advance(by: .seconds(6))
        directory.polled(directory.pollTargets()[1], ok(0))
        directory.settle()
        clock.advance(by: .seconds(5))
        XCTAssertEqual(directory.checkHealth().first?.to, SFUID("janus-b"))
        XCTAssertEqual(try store.allPlacements().first?.room, keys.roomID(call: "default:c1", sfu: SFUID("janus-b")!), "the failover stores the new room")
        XCTAssertEqual(directory.current(CallCID(cid: "default:c1")!)?.room?.id, keys.roomID(call: "default:c1", sfu: SFUID("janus-b")!))
    }
}
