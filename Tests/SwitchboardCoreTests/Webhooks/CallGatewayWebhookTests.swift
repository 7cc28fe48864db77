import Foundation
import SwitchboardCore
import XCTest

/// The outbox the call layer writes (ADR 0011): which log entries become webhook messages, for
/// which endpoints, with which per-call `seq` and data, and the `call.ring` of a member whose
/// app has no connection.
final class CallGatewayWebhookTests: XCTestCase {
    private let ringC1 = #"{"type":"ringing","id":"c1"}"#

    private func configuration(_ endpoints: [(String, Set<WebhookEventType>)]) -> CallConfiguration {
        var configuration = CallFixture.configuration(ringing: CallFixture.ringing(incoming: 30, autoCancel: 60))
        configuration.webhooks = WebhookRouting(endpoints: endpoints.map { (name: $0.0, events: $0.1) })
        return configuration
    }

    private let everything = Set(WebhookEventType.allCases)

    /// Runs the outbox step on the harness's last output and returns what it added.
    private func outbox(_ h: inout GatewayHarness) -> [(message: WebhookMessage, endpoints: [String])] {
        let before = h.last.mutations.count
        h.gateway.addWebhooks(into: &h.last, now: h.now, newID: h.ids.next)
        return h.last.mutations.dropFirst(before).compactMap {
            if case .enqueueWebhook(let message, let endpoints) = $0 { (message, endpoints) } else { nil }
        }
    }

    func test_withoutEndpointsNothingIsWritten() throws {
        var h = GatewayHarness(configuration([]))
        let alice = try XCTUnwrap(h.connect("alice"))
        h.request(alice.socket, "c", "call.get_or_create", #"{"type":"ringing","id":"c1","members":["bob"],"ring":true}"#)
        let before = h.last.mutations
        XCTAssertTrue(outbox(&h).isEmpty)
        XCTAssertEqual(h.last.mutations, before, "not even the call's record is saved again")
    }

    func test_aRingToAMemberWithoutAConnectionCarriesTheirDevicesAndEveryEventIsNumberedPerCall() throws {
        var h = GatewayHarness(configuration([("all", everything), ("rings", [.callRing, .callMissed])]))
        var ignored = CallOutput()
        _ = try h.gateway.registerDevice(
            DeviceRecord(userID: CallFixture.user("bob"), provider: .apnsVoIP, token: "bob-voip", createdAt: h.now), out: &ignored)
        let alice = try XCTUnwrap(h.connect("alice"))
        let carol = try XCTUnwrap(h.connect("carol"))

        h.request(alice.socket, "c", "call.get_or_create", #"{"type":"ringing","id":"c1","members":["bob","carol"],"ring":true}"#)
        let created = outbox(&h)
        XCTAssertEqual(created.map(\.message.type), [.callCreated, .callRing])
        XCTAssertEqual(created.map(\.endpoints), [["all"], ["all", "rings"]])
        XCTAssertEqual(created.map(\.message.seq), [1, 2])
        XCTAssertEqual(created.map(\.message.lane), ["ringing:c1", "ringing:c1"])
        let ring = created[1].message
        XCTAssertEqual(ring.data["call_cid"], .string("ringing:c1"))
        XCTAssertEqual(ring.data["seq"], .number(2))
        XCTAssertEqual(ring.data["call"]?["created_by"], .string("alice"))
        XCTAssertEqual(
            ring.data["ringing"],
            .array([
                .object([
                    "user_id": .string("bob"), "connected": .bool(false), "resumable": .bool(false), "ring_deadline": .time(h.now.addingTimeInterval(30)),
                    "devices": .array([.object(["provider": .string("apns_voip"), "token": .string("bob-voip")])]),
                ]),
                .object([
                    "user_id": .string("carol"), "connected": .bool(true), "resumable": .bool(false), "ring_deadline": .time(h.now.addingTimeInterval(30)),
                    "devices": .array([]),
                ]),
            ]))
        XCTAssertTrue(ring.id.hasPrefix("msg_"))
        XCTAssertNotEqual(created[0].message.id, ring.id)
        let body = try XCTUnwrap(JSONValue.parse(ring.body))
        XCTAssertEqual(body["type"], .string("call.ring"))
        XCTAssertEqual(body["created_at"], .number(h.now.timeIntervalSince1970 * 1000))
        XCTAssertEqual(h.gateway.engine.call(CallFixture.cid("ringing", "c1"))?.record.eventSeq, 2)
        XCTAssertEqual(
            h.last.mutations.last, .saveCall(try XCTUnwrap(h.gateway.engine.call(CallFixture.cid("ringing", "c1"))?.record)),
            "the call's record with its new event seq is committed with the messages")
        XCTAssertEqual(h.last.eventTypes(to: carol.socket), ["call.ring"], "a connected member is rung on their socket as before")

        // Bob's app wakes on the push, connects within the ring timeout and gets the ring.
        h.advance(5)
        let bob = try XCTUnwrap(h.connect("bob"))
        XCTAssertEqual(h.last.eventTypes(to: bob.socket), ["call.ring"])
        h.request(bob.socket, "a", "call.accept", ringC1)
        XCTAssertEqual(h.last.eventTypes(to: alice.socket), ["call.accepted"])
        let accepted = outbox(&h)
        XCTAssertEqual(accepted.map(\.message.type), [.callAccepted])
        XCTAssertEqual(accepted.first?.message.seq, 3)
        XCTAssertEqual(accepted.first?.message.data["user_id"], .string("bob"))

        // Carol never answers: missed at the incoming timeout.
        h.advance(30)
        h.tick()
        let missed = outbox(&h)
        XCTAssertEqual(missed.map(\.message.type), [.callMissed])
        XCTAssertEqual(missed.map(\.endpoints), [["all", "rings"]])
        XCTAssertEqual(missed.first?.message.seq, 4)
        XCTAssertEqual(missed.first?.message.data["user_id"], .string("carol"))
    }

    func test_callSessionsStartWithTheFirstParticipantAndEndWithTheLastOrWithTheCall() throws {
        var h = GatewayHarness(configuration([("all", everything)]))
        let alice = try XCTUnwrap(h.connect("alice"))
        let bob = try XCTUnwrap(h.connect("bob"))
        let standup = #"{"type":"default","id":"standup","create":true}"#

        h.request(alice.socket, "j", "call.join", standup)
        XCTAssertEqual(outbox(&h).map(\.message.type), [.callCreated, .callSessionStarted, .participantJoined])
        h.request(bob.socket, "j", "call.join", standup)
        XCTAssertEqual(outbox(&h).map(\.message.type), [.participantJoined])
        h.request(bob.socket, "l", "call.leave", #"{"type":"default","id":"standup"}"#)
        XCTAssertEqual(outbox(&h).map(\.message.type), [.participantLeft])
        h.request(alice.socket, "l", "call.leave", #"{"type":"default","id":"standup"}"#)
        let emptied = outbox(&h)
        XCTAssertEqual(emptied.map(\.message.type), [.participantLeft, .callSessionEnded])
        XCTAssertEqual(emptied.last?.message.data["reason"], .string("left"))
        XCTAssertEqual(emptied.map(\.message.seq), [6, 7])

        h.request(alice.socket, "j", "call.join", standup)
        XCTAssertEqual(outbox(&h).map(\.message.type), [.callSessionStarted, .participantJoined])
        h.request(bob.socket, "j", "call.join", standup)
        _ = outbox(&h)
        h.request(alice.socket, "e", "call.end", #"{"type":"default","id":"standup"}"#)
        let ended = outbox(&h)
        XCTAssertEqual(ended.map(\.message.type), [.participantLeft, .participantLeft, .callSessionEnded, .callEnded])
        XCTAssertEqual(ended.prefix(2).compactMap { $0.message.data["reason"]?.stringValue }, ["call_ended", "call_ended"])
        XCTAssertEqual(ended.last?.message.data["reason"], .string("ended_by_user"))
        XCTAssertEqual(ended.map(\.message.seq), [11, 12, 13, 14])
    }

    func test_anEndpointGetsOnlyTheEventsItsFilterNames() throws {
        var h = GatewayHarness(configuration([("billing", [.callEnded, .participantLeft])]))
        let alice = try XCTUnwrap(h.connect("alice"))
        h.request(alice.socket, "j", "call.join", #"{"type":"default","id":"b","create":true}"#)
        XCTAssertTrue(outbox(&h).isEmpty)
        h.request(alice.socket, "e", "call.end", #"{"type":"default","id":"b"}"#)
        let ended = outbox(&h)
        XCTAssertEqual(ended.map(\.message.type), [.participantLeft, .callEnded])
        XCTAssertEqual(ended.map(\.message.seq), [1, 2], "seq counts the messages written, so a receiver can see a gap")
    }

    func test_aRejectAndAnSFUMoveBecomeWebhooks() throws {
        var h = GatewayHarness(configuration([("all", everything)]))
        let alice = try XCTUnwrap(h.connect("alice"))
        let bob = try XCTUnwrap(h.connect("bob"))
        h.request(alice.socket, "c", "call.join", #"{"type":"ringing","id":"c1","create":true,"ring":true,"members":["bob"]}"#)
        _ = outbox(&h)
        h.request(bob.socket, "r", "call.reject", #"{"type":"ringing","id":"c1","reason":"busy"}"#)
        let rejected = outbox(&h)
        XCTAssertEqual(rejected.first?.message.type, .callRejected)
        XCTAssertEqual(rejected.first?.message.data["reason"], .string("busy"))

        XCTAssertEqual(rejected.map(\.message.type), [.callRejected, .participantLeft, .callSessionEnded, .callEnded], "everyone rejected: the call ends")

        h.request(alice.socket, "m", "call.join", #"{"type":"default","id":"m1","create":true}"#)
        _ = outbox(&h)
        let moved = SFUAssignment(id: "sfu-ams-1", url: "wss://sfu-ams-1.example/sfu", region: "ams")
        h.last = CallGatewayOutput()
        h.gateway.sfuChanged(CallFixture.cid("default", "m1"), to: moved, now: h.now, into: &h.last)
        let move = outbox(&h)
        XCTAssertEqual(move.map(\.message.type), [.sfuCallMoved])
        XCTAssertEqual(move.first?.message.data["sfu"]?["id"], .string("sfu-ams-1"))
    }

    func test_aMemberWhoseSocketIsGoneButResumableIsMarkedSoAndGetsTheirDevices() throws {
        var h = GatewayHarness(configuration([("all", everything)]))
        let alice = try XCTUnwrap(h.connect("alice"))
        let bob = try XCTUnwrap(h.connect("bob"))
        h.request(bob.socket, "d", "device.register", #"{"provider":"fcm","token":"bob-fcm"}"#)
        h.closeSocket(bob.socket)
        h.request(alice.socket, "c", "call.get_or_create", #"{"type":"ringing","id":"c2","members":["bob"],"ring":true}"#)
        let ring = try XCTUnwrap(outbox(&h).first { $0.message.type == .callRing }?.message)
        XCTAssertEqual(ring.data["ringing"]?.arrayValue?.first?["connected"], .bool(false))
        XCTAssertEqual(ring.data["ringing"]?.arrayValue?.first?["resumable"], .bool(true))
        XCTAssertEqual(ring.data["ringing"]?.arrayValue?.first?["devices"]?.arrayValue?.first?["token"], .string("bob-fcm"))
    }

    func test_aRingThatReachesNobodyWritesNoRingWebhook() throws {
        var configuration = configuration([("all", everything)])
        configuration.types["ringing"]?.busyPolicy = .reject
        var h = GatewayHarness(configuration)
        let alice = try XCTUnwrap(h.connect("alice"))
        let bob = try XCTUnwrap(h.connect("bob"))
        h.request(bob.socket, "j", "call.join", #"{"type":"default","id":"busy","create":true}"#)
        _ = outbox(&h)
        h.request(alice.socket, "c", "call.get_or_create", #"{"type":"ringing","id":"c3","members":["bob"],"ring":true}"#)
        let types = outbox(&h).map(\.message.type)
        XCTAssertFalse(types.contains(.callRing), "\(types)")
        XCTAssertTrue(types.contains(.callRejected), "\(types)")
    }

    // MARK: Presence known from the store (calls run by several nodes, ADR 0012)

    /// A batch told what the store knows of the users it rings: bob, busy in another node's
    /// call, is rejected `busy`; carol, connected to another node, is marked so and her devices
    /// left out; dave, resumable elsewhere, gets the devices the store holds. Without it the
    /// same ring goes by what this node holds.
    func test_whatTheStoreKnowsOfRungUsersDecidesBusyConnectedAndDevices() throws {
        let ring = #"{"type":"ringing","id":"c1","create":true,"ring":true,"members":["bob","carol","dave"]}"#
        let davesPhone = DeviceRecord(userID: CallFixture.user("dave"), provider: .fcm, token: "dave-fcm", createdAt: CallFixture.base)
        func rung(knowing presence: [UserID: UserPresence]) throws -> (members: [String: String], ringing: JSONValue?) {
            var h = GatewayHarness(configuration([("all", everything)]))
            let alice = try XCTUnwrap(h.connect("alice"))
            h.gateway.know(presence)
            h.request(alice.socket, "c", "call.join", ring)
            let message = outbox(&h).first { $0.message.type == .callRing }?.message
            h.gateway.clearRefusals()
            XCTAssertTrue(h.gateway.engine.presence.isEmpty, "known for one batch")
            let call = try XCTUnwrap(h.gateway.engine.call(CallFixture.cid("ringing", "c1")))
            let states = Dictionary(uniqueKeysWithValues: call.members.map { ($0.key.rawValue, $0.value.ringState.rawValue) })
            return (states, message?.data["ringing"])
        }
        let other = CallFixture.cid("default", "elsewhere")
        let known = try rung(knowing: [
            CallFixture.user("bob"): UserPresence(calls: [other], attached: true),
            CallFixture.user("carol"): UserPresence(attached: true, devices: [DeviceRecord(userID: CallFixture.user("carol"), provider: .fcm, token: "c", createdAt: CallFixture.base)]),
            CallFixture.user("dave"): UserPresence(resumable: true, devices: [davesPhone]),
        ])
        XCTAssertEqual(known.members, ["alice": "none", "bob": "rejected", "carol": "ringing", "dave": "ringing"])
        let deadline = JSONValue.time(CallFixture.base.addingTimeInterval(30))
        XCTAssertEqual(
            known.ringing,
            .array([
                .object(["user_id": "carol", "connected": .bool(true), "resumable": .bool(false), "ring_deadline": deadline, "devices": .array([])]),
                .object([
                    "user_id": "dave", "connected": .bool(false), "resumable": .bool(true), "ring_deadline": deadline,
                    "devices": .array([.object(["provider": "fcm", "token": "dave-fcm"])]),
                ]),
            ]))

        let unknown = try rung(knowing: [:])
        XCTAssertEqual(unknown.members["bob"], "ringing", "nothing this node holds says bob is busy")
        XCTAssertEqual(unknown.ringing?.arrayValue?.map { $0["connected"] }, [.bool(false), .bool(false), .bool(false)])
    }
}
