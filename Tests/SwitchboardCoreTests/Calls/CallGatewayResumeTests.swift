import Foundation
import SwitchboardCore
import XCTest

/// Event numbering per connection, several devices per user, and resuming a connection on a
/// new socket (replay, overflow, the resume window, taking over a live socket).
final class CallGatewayResumeTests: XCTestCase {
    private let ringC1 = #"{"type":"ringing","id":"c1"}"#
    private let standup = #"{"type":"default","id":"standup"}"#

    // MARK: seq

    func test_everyConnectionNumbersItsOwnEventsAndEveryDeviceOfAUserGetsUserEvents() throws {
        var h = GatewayHarness()
        let alice = try XCTUnwrap(h.connect("alice"))
        let bobPhone = try XCTUnwrap(h.connect("bob"))
        let bobLaptop = try XCTUnwrap(h.connect("bob"))

        h.request(alice.socket, "g1", "call.get_or_create", #"{"type":"ringing","id":"c1","members":["bob"],"ring":true}"#)
        XCTAssertEqual(h.last.eventTypes(to: bobPhone.socket), ["call.ring"])
        XCTAssertEqual(h.last.eventTypes(to: bobLaptop.socket), ["call.ring"])
        XCTAssertEqual(h.last.seqs(to: bobPhone.socket), [1])
        XCTAssertEqual(h.last.seqs(to: bobLaptop.socket), [1])
        XCTAssertEqual(h.last.events(to: bobPhone.socket).first?["call_cid"], .string("ringing:c1"))
        XCTAssertEqual(h.last.eventTypes(to: alice.socket), [])
        XCTAssertEqual(h.last.deliveredNotices, 1)

        h.request(alice.socket, "j1", "call.join", ringC1)
        XCTAssertEqual(h.last.frames(to: alice.socket).map { $0["type"]?.stringValue }, ["response"])

        let answer = h.request(bobPhone.socket, "a1", "call.accept", ringC1)
        XCTAssertEqual(answer?["type"], .string("response"))
        XCTAssertEqual(h.last.eventTypes(to: alice.socket), ["call.accepted"])
        XCTAssertEqual(h.last.seqs(to: alice.socket), [1])
        XCTAssertEqual(h.last.eventTypes(to: bobLaptop.socket), ["call.ring_stopped"])
        XCTAssertEqual(h.last.events(to: bobLaptop.socket).first?["data"]?["reason"], .string("accepted_elsewhere"))
        XCTAssertEqual(h.last.seqs(to: bobLaptop.socket), [2])
        XCTAssertEqual(h.last.eventTypes(to: bobPhone.socket), [], "the answering device gets only its response")

        h.request(bobPhone.socket, "j2", "call.join", ringC1)
        XCTAssertEqual(h.last.eventTypes(to: alice.socket), ["call.participant_joined"])
        XCTAssertEqual(h.last.seqs(to: alice.socket), [2])
        h.request(bobPhone.socket, "u1", "call.update_participant", #"{"type":"ringing","id":"c1","audio":true}"#)
        XCTAssertEqual(h.last.seqs(to: alice.socket), [3])
        XCTAssertEqual(h.last.seqs(to: bobPhone.socket), [2])
        XCTAssertEqual(h.last.eventTypes(to: bobLaptop.socket), [], "participant events go to the participating connection only")
        XCTAssertEqual(h.gateway.clients[alice.connection]?.nextSeq, 4)
    }

    func test_aResponseComesBeforeTheEventsItCaused() throws {
        var h = GatewayHarness()
        let alice = try XCTUnwrap(h.connect("alice"))
        h.request(alice.socket, "j1", "call.join", #"{"type":"default","id":"standup","create":true}"#)
        h.request(alice.socket, "u1", "call.update_participant", #"{"type":"default","id":"standup","speaking":true,"audio_level":0.5}"#)
        XCTAssertEqual(
            h.last.frames(to: alice.socket).map { $0["type"]?.stringValue }, ["response", "call.dominant_speaker_changed", "call.participant_updated"])
        XCTAssertEqual(h.last.seqs(to: alice.socket), [1, 2])
    }

    // MARK: Resume

    /// alice (id-1, resume token id2id3) and bob (id-4) in the meeting; alice (session id-7)
    /// has seen event 1 (bob joining).
    private func meetingOfTwo() throws -> (GatewayHarness, Device, Device) {
        var h = GatewayHarness()
        let alice = try XCTUnwrap(h.connect("alice"))
        let bob = try XCTUnwrap(h.connect("bob"))
        h.request(alice.socket, "j1", "call.join", #"{"type":"default","id":"standup","create":true}"#)
        h.request(bob.socket, "j2", "call.join", standup)
        XCTAssertEqual(h.last.seqs(to: alice.socket), [1])
        return (h, alice, bob)
    }

    func test_aResumeWithinTheWindowReplaysExactlyTheMissedEventsAndKeepsTheSessions() throws {
        var (h, alice, bob) = try meetingOfTwo()
        XCTAssertEqual(alice.resumeToken, "id2id3")
        h.closeSocket(alice.socket)
        XCTAssertEqual(h.gateway.clients[alice.connection]?.detachedAt, CallFixture.base)
        h.advance(5)
        h.request(bob.socket, "u1", "call.update_participant", #"{"type":"default","id":"standup","audio":true}"#)
        XCTAssertFalse(h.last.sendTargets.contains(alice.socket))
        h.request(bob.socket, "e1", "call.send_event", #"{"type":"default","id":"standup","custom":{"emoji":"wave"}}"#)
        let idsBefore = h.ids.issued

        h.advance(20)
        let resumed = try XCTUnwrap(h.connect("alice", resume: ResumeRequest(token: "id2id3", lastSeq: 1)))
        XCTAssertEqual(resumed.connection, alice.connection)
        XCTAssertEqual(resumed.resumeToken, "id2id3")
        XCTAssertEqual(resumed.ok["resumed"], .bool(true))
        XCTAssertEqual(resumed.ok["replayed"], .number(2))
        XCTAssertEqual(resumed.ok["replay_complete"], .bool(true))
        XCTAssertEqual(resumed.ok["last_seq"], .number(3))
        XCTAssertEqual(resumed.ok["sessions"], .array([.string("id-7")]))
        let frames = h.last.frames(to: resumed.socket)
        XCTAssertEqual(frames.map { $0["type"]?.stringValue }, ["connection.ok", "call.participant_updated", "call.custom"])
        XCTAssertEqual(h.last.seqs(to: resumed.socket), [2, 3])
        XCTAssertEqual(frames.last?["data"]?["custom"], .object(["emoji": .string("wave")]))
        XCTAssertEqual(h.ids.issued, idsBefore, "a resume makes no new connection")
        guard case .saveConnection(let record)? = h.last.mutations.first else { return XCTFail("\(h.last.mutations)") }
        XCTAssertEqual(record.id, alice.connection)
        XCTAssertNil(record.detachedAt)
        XCTAssertEqual(h.last.mutations.count, 1)
        XCTAssertEqual(h.gateway.engine.sessions(of: alice.connection), [SessionID("id-7")])
        XCTAssertEqual(h.gateway.clients[alice.connection]?.socket, resumed.socket)
        XCTAssertNil(h.gateway.clients[alice.connection]?.detachedAt)

        h.request(bob.socket, "l1", "call.leave", standup)
        XCTAssertEqual(h.last.eventTypes(to: resumed.socket), ["call.participant_left"])
        XCTAssertEqual(h.last.seqs(to: resumed.socket), [4])
    }

    func test_aResumeThatMissedNothingReplaysNothing() throws {
        var (h, alice, _) = try meetingOfTwo()
        h.closeSocket(alice.socket)
        let resumed = try XCTUnwrap(h.connect("alice", resume: ResumeRequest(token: alice.resumeToken, lastSeq: 1)))
        XCTAssertEqual(resumed.ok["replayed"], .number(0))
        XCTAssertEqual(resumed.ok["replay_complete"], .bool(true))
        XCTAssertEqual(h.last.frames(to: resumed.socket).count, 1)
    }

    func test_aResumeAfterTheBufferOverflowedReportsAnIncompleteReplayAndRingsAgain() throws {
        var h = GatewayHarness(CallConfiguration(replayBuffer: 2))
        let alice = try XCTUnwrap(h.connect("alice"))
        let carol = try XCTUnwrap(h.connect("carol"))
        h.closeSocket(alice.socket)
        for id in ["c1", "c2", "c3"] {
            h.request(carol.socket, id, "call.get_or_create", #"{"type":"ringing","id":"\#(id)","members":["alice"],"ring":true}"#)
        }
        XCTAssertEqual(h.gateway.clients[alice.connection]?.nextSeq, 4)

        let resumed = try XCTUnwrap(h.connect("alice", resume: ResumeRequest(token: alice.resumeToken, lastSeq: 0)))
        XCTAssertEqual(resumed.connection, alice.connection)
        XCTAssertEqual(resumed.ok["replay_complete"], .bool(false))
        XCTAssertEqual(resumed.ok["replayed"], .number(2))
        XCTAssertEqual(resumed.ok["last_seq"], .number(3))
        XCTAssertEqual(h.last.seqs(to: resumed.socket), [2, 3, 4, 5, 6])
        XCTAssertEqual(h.last.events(to: resumed.socket).compactMap { $0["call_cid"]?.stringValue }, ["ringing:c2", "ringing:c3", "ringing:c1", "ringing:c2", "ringing:c3"])
        XCTAssertEqual(Set(h.last.eventTypes(to: resumed.socket)), ["call.ring"])
    }

    func test_aResumeWithinTheBufferAfterAnOverflowIsComplete() throws {
        var h = GatewayHarness(CallConfiguration(replayBuffer: 2))
        let alice = try XCTUnwrap(h.connect("alice"))
        let carol = try XCTUnwrap(h.connect("carol"))
        h.closeSocket(alice.socket)
        for id in ["c1", "c2", "c3"] {
            h.request(carol.socket, id, "call.get_or_create", #"{"type":"ringing","id":"\#(id)","members":["alice"],"ring":true}"#)
        }
        let resumed = try XCTUnwrap(h.connect("alice", resume: ResumeRequest(token: alice.resumeToken, lastSeq: 1)))
        XCTAssertEqual(resumed.ok["replay_complete"], .bool(true))
        XCTAssertEqual(h.last.seqs(to: resumed.socket), [2, 3])
    }

    func test_afterTheResumeWindowTheSessionsLeaveConnectionLostAndAResumeStartsAfresh() throws {
        var (h, alice, bob) = try meetingOfTwo()
        h.closeSocket(alice.socket)
        h.advance(29.5)
        h.tick()
        XCTAssertTrue(h.last.mutations.isEmpty)
        XCTAssertEqual(h.gateway.engine.sessions(of: alice.connection), [SessionID("id-7")])

        h.advance(0.5)
        h.tick()
        let left = h.last.events(to: bob.socket)
        XCTAssertEqual(left.map { $0["type"]?.stringValue }, ["call.participant_left"])
        XCTAssertEqual(left.first?["data"]?["participant"]?["reason"], .string("connection_lost"))
        XCTAssertEqual(left.first?["data"]?["participant"]?["user_id"], .string("alice"))
        XCTAssertEqual(h.last.calls.savedSessions.map(\.leftReason), ["connection_lost"])
        XCTAssertTrue(h.last.mutations.contains(.deleteConnection(alice.connection)))
        XCTAssertNil(h.gateway.clients[alice.connection])
        XCTAssertTrue(h.gateway.engine.sessions(of: alice.connection).isEmpty)

        let fresh = try XCTUnwrap(h.connect("alice", resume: ResumeRequest(token: alice.resumeToken, lastSeq: 1)))
        XCTAssertNotEqual(fresh.connection, alice.connection)
        XCTAssertEqual(fresh.ok["resumed"], .bool(false))
        XCTAssertEqual(fresh.ok["sessions"], .array([]))
        XCTAssertEqual(fresh.ok["last_seq"], .number(0))
    }

    func test_aResumeOnANewSocketClosesTheStillAttachedOldSocketWith4002() throws {
        var (h, alice, bob) = try meetingOfTwo()
        let resumed = try XCTUnwrap(h.connect("alice", resume: ResumeRequest(token: alice.resumeToken, lastSeq: 1)))
        XCTAssertEqual(h.last.closes(of: alice.socket).map { $0.code }, [.replaced])
        XCTAssertEqual(h.last.closes(of: alice.socket).first?.code.rawValue, 4002)
        XCTAssertEqual(resumed.connection, alice.connection)
        XCTAssertEqual(h.gateway.socketCount, 2)
        XCTAssertEqual(h.gateway.clients[alice.connection]?.socket, resumed.socket)

        h.closeSocket(alice.socket)
        XCTAssertEqual(h.gateway.clients[alice.connection]?.socket, resumed.socket, "the old socket's close does not detach the resumed connection")
        XCTAssertNil(h.gateway.clients[alice.connection]?.detachedAt)
        h.request(bob.socket, "u1", "call.update_participant", #"{"type":"default","id":"standup","video":true}"#)
        XCTAssertEqual(h.last.seqs(to: resumed.socket), [2])
        XCTAssertFalse(h.last.sendTargets.contains(alice.socket))
        h.send(alice.socket, #"{"id":"p","type":"ping"}"#)
        XCTAssertTrue(h.last.commands.isEmpty, "the replaced socket is no longer served")
    }

    func test_anotherUsersResumeTokenDoesNotResume() throws {
        var (h, alice, _) = try meetingOfTwo()
        h.closeSocket(alice.socket)
        let mallory = try XCTUnwrap(h.connect("mallory", resume: ResumeRequest(token: alice.resumeToken, lastSeq: 0)))
        XCTAssertNotEqual(mallory.connection, alice.connection)
        XCTAssertEqual(mallory.ok["resumed"], .bool(false))
        XCTAssertEqual(h.last.frames(to: mallory.socket).count, 1)
        XCTAssertNil(h.gateway.clients[alice.connection]?.socket)
        XCTAssertEqual(h.gateway.engine.sessions(of: alice.connection), [SessionID("id-7")])
    }

    func test_anIdleClosedSocketCanBeResumed() throws {
        var (h, alice, bob) = try meetingOfTwo()
        h.advance(50)
        h.send(bob.socket, #"{"id":"p","type":"ping"}"#)
        h.advance(10)
        h.tick()
        XCTAssertEqual(h.last.closes(of: alice.socket).map { $0.code }, [.idleTimeout])
        XCTAssertTrue(h.last.closes(of: bob.socket).isEmpty)
        h.request(bob.socket, "u1", "call.update_participant", #"{"type":"default","id":"standup","audio":true}"#)

        let resumed = try XCTUnwrap(h.connect("alice", resume: ResumeRequest(token: alice.resumeToken, lastSeq: 1)))
        XCTAssertEqual(resumed.connection, alice.connection)
        XCTAssertEqual(h.last.seqs(to: resumed.socket), [2])
    }

    // MARK: call_cids

    func test_aConnectionWhoseTokenNamesOtherCallsGetsNoneOfTheUsersEventsForThisOne() throws {
        var h = GatewayHarness()
        let alice = try XCTUnwrap(h.connect("alice"))
        let bobPhone = try XCTUnwrap(h.connect("bob"))
        let bobGuest = try XCTUnwrap(h.connect("bob", token: h.token("bob", cids: ["default:standup"])))
        let bobInvited = try XCTUnwrap(h.connect("bob", token: h.token("bob", cids: ["ringing:c1"])))

        h.request(alice.socket, "g1", "call.get_or_create", #"{"type":"ringing","id":"c1","members":["bob"],"ring":true}"#)
        XCTAssertEqual(h.last.eventTypes(to: bobPhone.socket), ["call.ring"])
        XCTAssertEqual(h.last.eventTypes(to: bobInvited.socket), ["call.ring"], "its call_cids name the call")
        XCTAssertEqual(h.last.eventTypes(to: bobGuest.socket), [], "its call_cids leave the call out")

        let lateGuest = try XCTUnwrap(h.connect("bob", token: h.token("bob", cids: ["default:standup"])))
        XCTAssertEqual(h.last.frames(to: lateGuest.socket).map { $0["type"]?.stringValue }, ["connection.ok"], "no pending ring either")

        h.request(bobPhone.socket, "a1", "call.accept", ringC1)
        XCTAssertEqual(h.last.eventTypes(to: bobInvited.socket), ["call.ring_stopped"])
        XCTAssertEqual(h.last.eventTypes(to: bobGuest.socket), [])
        XCTAssertEqual(h.last.seqs(to: bobInvited.socket), [2])
    }
}
