import Foundation
import SwitchboardCore
import XCTest

/// Wire requests: `{"id":…,"type":…,"data":{…}}` into ``ClientFrame``, and the errors that
/// answer bad ones (with the request's id whenever it could be read).
final class ClientFrameParsingTests: XCTestCase {
    private let ringing = CallFixture.cid("ringing", "abc")

    private func parse(_ text: String, maxCustomBytes: Int = 5120) -> Result<ClientFrame, ClientFrame.ParseFailure> {
        ClientFrame.parse(Array(text.utf8), maxCustomBytes: maxCustomBytes)
    }

    private func request(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> ClientRequest? {
        switch parse(text) {
        case .success(let frame): return frame.request
        case .failure(let failure):
            XCTFail("\(text) failed: \(failure.error)", file: file, line: line)
            return nil
        }
    }

    private func assertFailure(
        _ text: String, _ code: SwitchboardError.Code, id: JSONValue, maxCustomBytes: Int = 5120, file: StaticString = #filePath, line: UInt = #line
    ) {
        switch parse(text, maxCustomBytes: maxCustomBytes) {
        case .success(let frame): XCTFail("\(text) parsed as \(frame)", file: file, line: line)
        case .failure(let failure):
            XCTAssertEqual(failure.error.code, code, failure.error.message, file: file, line: line)
            XCTAssertEqual(failure.id, id, file: file, line: line)
        }
    }

    // MARK: Requests

    func test_joinWithEveryParameter() throws {
        let frame = try parse(
            #"{"id":"r1","type":"call.join","data":{"type":"ringing","id":"abc","create":true,"ring":true,"members":["bob",{"user_id":"carol"},"bob"],"location":{"latitude":50.1,"longitude":8.7,"region":"fra","rtt":{"sfu-1":12,"sfu-2":"x"}}}}"#
        ).get()
        XCTAssertEqual(frame.id, .string("r1"))
        XCTAssertEqual(
            frame.request,
            .join(
                ringing, create: true, ring: true, members: [CallFixture.user("bob"), CallFixture.user("carol")],
                location: LocationHint(rtt: ["sfu-1": 12], latitude: 50.1, longitude: 8.7, region: "fra")))
        XCTAssertEqual(frame.request.cid, ringing)
    }

    func test_joinDefaultsToNoCreateNoRingNoMembersNoLocation() {
        XCTAssertEqual(
            request(#"{"id":7,"type":"call.join","data":{"type":"default","id":"m"}}"#),
            .join(CallFixture.cid("default", "m"), create: false, ring: false, members: [], location: nil))
    }

    func test_numericIdsAreKept() throws {
        XCTAssertEqual(try parse(#"{"id":42,"type":"ping"}"#).get(), ClientFrame(id: .number(42), request: .ping))
        XCTAssertEqual(try parse(#"{"type":"ping"}"#).get().id, .null)
    }

    func test_authReadsTheTokenAndResumeFromTheRootOrData() {
        XCTAssertEqual(request(#"{"type":"auth","token":"t1"}"#), .auth(token: "t1", resume: nil))
        XCTAssertEqual(
            request(#"{"type":"auth","token":"t1","resume_token":"r","last_seq":12}"#), .auth(token: "t1", resume: ResumeRequest(token: "r", lastSeq: 12)))
        XCTAssertEqual(
            request(#"{"type":"auth","data":{"token":"t2","resume_token":"r"}}"#), .auth(token: "t2", resume: ResumeRequest(token: "r", lastSeq: 0)))
    }

    func test_everyCallRequestParses() {
        let cid = #""type":"ringing","id":"abc""#
        XCTAssertEqual(
            request(#"{"id":1,"type":"call.get_or_create","data":{\#(cid),"members":["bob"],"ring":true,"custom":{"topic":"x"}}}"#),
            .getOrCreate(ringing, members: [CallFixture.user("bob")], ring: true, custom: .object(["topic": .string("x")])))
        XCTAssertEqual(request(#"{"id":1,"type":"call.get","data":{\#(cid)}}"#), .get(ringing))
        XCTAssertEqual(request(#"{"id":1,"type":"call.leave","data":{\#(cid),"session_id":"s-1"}}"#), .leave(ringing, session: SessionID("s-1")))
        XCTAssertEqual(request(#"{"id":1,"type":"call.end","data":{\#(cid)}}"#), .end(ringing))
        XCTAssertEqual(request(#"{"id":1,"type":"call.invite","data":{\#(cid),"members":["dave"]}}"#), .invite(ringing, members: [CallFixture.user("dave")]))
        XCTAssertEqual(request(#"{"id":1,"type":"call.accept","data":{\#(cid)}}"#), .accept(ringing))
        XCTAssertEqual(request(#"{"id":1,"type":"call.reject","data":{\#(cid)}}"#), .reject(ringing, reason: .decline))
        XCTAssertEqual(request(#"{"id":1,"type":"call.reject","data":{\#(cid),"reason":"cancel"}}"#), .reject(ringing, reason: .cancel))
        XCTAssertEqual(
            request(#"{"id":1,"type":"call.update_participant","data":{\#(cid),"audio":true,"audio_level":0.25,"session_id":"s-2"}}"#),
            .updateParticipant(ringing, session: SessionID("s-2"), update: MediaUpdate(audio: true, audioLevel: 0.25)))
        XCTAssertEqual(
            request(#"{"id":1,"type":"call.send_event","data":{\#(cid),"custom":{"emoji":"x"}}}"#),
            .sendEvent(ringing, custom: .object(["emoji": .string("x")])))
        XCTAssertEqual(
            request(#"{"id":1,"type":"signal.send","data":{"to_session":"s-2","kind":"candidate","payload":{"candidate":"c"},"session_id":"s-1"}}"#),
            .signal(from: SessionID("s-1"), to: SessionID("s-2"), kind: .candidate, payload: .object(["candidate": .string("c")])))
        XCTAssertEqual(request(#"{"id":1,"type":"token.refresh","data":{"token":"t"}}"#), .tokenRefresh(token: "t"))
    }

    // MARK: Errors

    func test_aFrameThatIsNotAJSONObjectHasNoId() {
        assertFailure("hello", .invalidRequest, id: .null)
        assertFailure("[1,2]", .invalidRequest, id: .null)
        assertFailure(#"{"id":"r1","type":"ping""#, .invalidRequest, id: .null)
        assertFailure(#"{"id":{"x":1},"type":"ping"}"#, .invalidRequest, id: .null)
    }

    func test_aMissingOrNonStringTypeIsAnsweredWithTheId() {
        assertFailure(#"{"id":"r1"}"#, .invalidRequest, id: .string("r1"))
        assertFailure(#"{"id":3,"type":5}"#, .invalidRequest, id: .number(3))
    }

    func test_anUnknownTypeIsUnknownType() {
        assertFailure(#"{"id":"r2","type":"call.teleport","data":{}}"#, .unknownType, id: .string("r2"))
    }

    func test_aBadCidIsAnInvalidRequest() {
        assertFailure(#"{"id":"r3","type":"call.join","data":{"type":"ringing","id":"a:b"}}"#, .invalidRequest, id: .string("r3"))
        assertFailure(#"{"id":"r3","type":"call.join","data":{"type":"ringing"}}"#, .invalidRequest, id: .string("r3"))
        assertFailure(#"{"id":"r3","type":"call.join","data":{"type":"","id":"x"}}"#, .invalidRequest, id: .string("r3"))
        let long = String(repeating: "x", count: 65)
        assertFailure(#"{"id":"r3","type":"call.get","data":{"type":"default","id":"\#(long)"}}"#, .invalidRequest, id: .string("r3"))
        assertFailure(#"{"id":"r3","type":"call.get","data":"default:x"}"#, .invalidRequest, id: .string("r3"))
    }

    func test_customLargerThanTheCapIsPayloadTooLarge() {
        let text = String(repeating: "y", count: 100)
        assertFailure(
            #"{"id":"r4","type":"call.send_event","data":{"type":"default","id":"m","custom":{"t":"\#(text)"}}}"#, .payloadTooLarge, id: .string("r4"),
            maxCustomBytes: 64)
        assertFailure(
            #"{"id":"r4","type":"call.get_or_create","data":{"type":"default","id":"m","custom":{"t":"\#(text)"}}}"#, .payloadTooLarge,
            id: .string("r4"), maxCustomBytes: 64)
        assertFailure(#"{"id":"r4","type":"call.send_event","data":{"type":"default","id":"m","custom":[1]}}"#, .invalidRequest, id: .string("r4"))
        assertFailure(#"{"id":"r4","type":"call.send_event","data":{"type":"default","id":"m"}}"#, .invalidRequest, id: .string("r4"))
    }

    func test_badParametersNameTheRequest() {
        let cid = #""type":"default","id":"m""#
        assertFailure(#"{"id":5,"type":"call.join","data":{\#(cid),"create":"yes"}}"#, .invalidRequest, id: .number(5))
        assertFailure(#"{"id":5,"type":"call.join","data":{\#(cid),"members":"bob"}}"#, .invalidRequest, id: .number(5))
        assertFailure(#"{"id":5,"type":"call.join","data":{\#(cid),"members":[""]}}"#, .invalidRequest, id: .number(5))
        assertFailure(#"{"id":5,"type":"call.join","data":{\#(cid),"location":"fra"}}"#, .invalidRequest, id: .number(5))
        assertFailure(#"{"id":5,"type":"call.invite","data":{\#(cid),"members":[]}}"#, .invalidRequest, id: .number(5))
        assertFailure(#"{"id":5,"type":"call.reject","data":{\#(cid),"reason":"bored"}}"#, .invalidRequest, id: .number(5))
        assertFailure(#"{"id":5,"type":"call.update_participant","data":{\#(cid)}}"#, .invalidRequest, id: .number(5))
        assertFailure(#"{"id":5,"type":"call.update_participant","data":{\#(cid),"audio_level":1.5}}"#, .invalidRequest, id: .number(5))
        assertFailure(#"{"id":5,"type":"call.leave","data":{\#(cid),"session_id":7}}"#, .invalidRequest, id: .number(5))
        // The admin API's rule for a session id: 1–64 of A–Z a–z 0–9 _ -.
        assertFailure(#"{"id":5,"type":"call.leave","data":{\#(cid),"session_id":"s.1"}}"#, .invalidRequest, id: .number(5))
        assertFailure(#"{"id":5,"type":"call.leave","data":{\#(cid),"session_id":"s 1"}}"#, .invalidRequest, id: .number(5))
        assertFailure(#"{"id":5,"type":"signal.send","data":{"kind":"offer","payload":"x"}}"#, .invalidRequest, id: .number(5))
        assertFailure(#"{"id":5,"type":"signal.send","data":{"to_session":"s","kind":"hello","payload":"x"}}"#, .invalidRequest, id: .number(5))
        assertFailure(#"{"id":5,"type":"signal.send","data":{"to_session":"s","kind":"offer"}}"#, .invalidRequest, id: .number(5))
        assertFailure(#"{"id":5,"type":"token.refresh","data":{}}"#, .invalidRequest, id: .number(5))
    }

    func test_authWithoutATokenIsUnauthenticatedAndABadResumeIsInvalid() {
        assertFailure(#"{"id":"a","type":"auth"}"#, .unauthenticated, id: .string("a"))
        assertFailure(#"{"id":"a","type":"auth","token":""}"#, .unauthenticated, id: .string("a"))
        assertFailure(#"{"id":"a","type":"auth","token":"t","resume_token":"r","last_seq":-1}"#, .invalidRequest, id: .string("a"))
        assertFailure(#"{"id":"a","type":"auth","token":"t","resume_token":"r","last_seq":1.5}"#, .invalidRequest, id: .string("a"))
        assertFailure(#"{"id":"a","type":"auth","token":"t","resume_token":5}"#, .invalidRequest, id: .string("a"))
    }
}
