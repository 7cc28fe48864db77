import Foundation
import SwitchboardCore
import XCTest

/// ``CallForwardBatch`` on the bus: what one node writes the other reads back, and what is
/// malformed is refused, never trapped on.
final class CallForwardBatchJSONTests: XCTestCase {
    private func sample() -> CallForwardBatch {
        let cid = CallCID(type: "default", id: "standup")!
        let actor = CallActor(
            user: UserID("ålice \"quoted\"")!, connection: ClientConnectionID("b-1"), allowedCIDs: ["default:standup", "default:b"], isAdmin: true)
        return CallForwardBatch(
            requests: [
                ForwardedCallRequest(
                    ticket: "t-1", cid: cid, owner: CallOwner(node: "node-a", generation: 7), actor: actor, remoteAddress: "2001:db8::1",
                    frame: .object(["id": .number(1), "type": .string("call.get"), "data": .object(["type": .string("default"), "id": .string("standup")])]))
            ],
            answers: [
                ForwardedCallAnswer(ticket: "t-2", result: .success(.object(["session_id": .string("s-1"), "n": .number(2.5)]))),
                ForwardedCallAnswer(ticket: "t-3", result: .failure(SwitchboardError(.callNotFound, "no call \"x\"\n"))),
            ],
            notices: [
                CallNotice(
                    type: "call.ring", cid: cid, data: .object(["from": .string("bob")]), connections: [ClientConnectionID("a-2")],
                    users: [UserID("carol")!, UserID("dave")!], except: ClientConnectionID("a-9")),
                CallNotice(type: "connection.note", cid: nil, data: .array([.null, .bool(true)])),
            ],
            lostConnections: [ClientConnectionID("b-4"), ClientConnectionID("b-5")], movedConnections: [ClientConnectionID("b-6")],
            adminRequests: [
                ForwardedAdminRequest(ticket: "t-4", cid: cid, owner: CallOwner(node: "node-a", generation: 7), action: .end),
                ForwardedAdminRequest(ticket: "t-5", cid: cid, owner: CallOwner(node: "node-a", generation: 7), action: .kick(SessionID("s-\"9"))),
            ])
    }

    func test_aBatchReadsBackAsWritten() throws {
        let batch = sample()
        XCTAssertEqual(CallForwardBatch.read(batch.json()), batch)
        XCTAssertEqual(CallForwardBatch.read(CallForwardBatch().json()), CallForwardBatch())
        let unlimited = CallForwardBatch(requests: [
            ForwardedCallRequest(
                ticket: "t", cid: CallCID(type: "a", id: "b")!, owner: CallOwner(node: "n", generation: 1),
                actor: CallActor(user: UserID("u")!, connection: ClientConnectionID("c")), remoteAddress: "", frame: .object([:]))
        ])
        XCTAssertEqual(CallForwardBatch.read(unlimited.json())?.requests.first?.actor.allowedCIDs, nil, "no call_cids stays no limit")
    }

    func test_membersAReaderDoesNotKnowAreSkipped() throws {
        let text = #"{"v":1,"later":{"x":[1,2]},"lost":["c-1"]}"#
        XCTAssertEqual(CallForwardBatch.read(Array(text.utf8))?.lostConnections, [ClientConnectionID("c-1")])
    }

    func test_anErrorCodeThisBuildDoesNotKnowKeepsItsText() throws {
        let text = #"{"v":1,"answers":[{"ticket":"t","error":{"code":"from_the_future","message":"later"}}]}"#
        let answer = try XCTUnwrap(CallForwardBatch.read(Array(text.utf8))?.answers.first)
        guard case .failure(let error) = answer.result else { return XCTFail("\(answer)") }
        XCTAssertEqual(error.code, .internalError)
        XCTAssertEqual(error.message, "from_the_future: later")
    }

    func test_malformedBatchesAreRefused() throws {
        let request =
            #"{"ticket":"t","cid":"default:x","owner":"n","generation":GEN,"user":"u","connection":"c","call_cids":null,"admin":false,"remote":"","frame":{}}"#
        let malformed = [
            "", "[]", "{}", #"{"v":2}"#, #"{"v":"1"}"#, #"{"v":1,"lost":"c"}"#, #"{"v":1,"lost":[1]}"#, #"{"v":1,"moved":[null]}"#,
            #"{"v":1,"answers":[{"ticket":"t"}]}"#, #"{"v":1,"answers":[{"ticket":"t","error":{"code":"x"}}]}"#,
            #"{"v":1,"notices":[{"type":"t","data":{},"connections":[],"users":[""]}]}"#,
            #"{"v":1,"notices":[{"type":"t","cid":"nocolon","data":{},"connections":[],"users":[]}]}"#,
            #"{"v":1,"admin":[{"ticket":"t","cid":"default:x","owner":"n","generation":1,"action":"kick"}]}"#,
            #"{"v":1,"admin":[{"ticket":"t","cid":"default:x","owner":"n","generation":1,"action":"mute"}]}"#,
            #"{"v":1,"admin":[{"ticket":"t","cid":"default:x","owner":"n","action":"end"}]}"#,
            #"{"v":1,"requests":["# + request.replacingOccurrences(of: "GEN", with: "1e300") + "]}",
            #"{"v":1,"requests":["# + request.replacingOccurrences(of: "GEN", with: "1.5") + "]}",
            #"{"v":1,"requests":["# + request.replacingOccurrences(of: "GEN", with: "1").replacingOccurrences(of: "\"frame\":{}", with: "\"frame\":[]")
                + "]}",
            #"{"v":1,"requests":["# + request.replacingOccurrences(of: "GEN", with: "1").replacingOccurrences(of: "null", with: "[1]") + "]}",
        ]
        for text in malformed {
            XCTAssertNil(CallForwardBatch.read(Array(text.utf8)), text)
        }
        let good = #"{"v":1,"requests":["# + request.replacingOccurrences(of: "GEN", with: "1") + "]}"
        XCTAssertEqual(CallForwardBatch.read(Array(good.utf8))?.requests.first?.owner, CallOwner(node: "n", generation: 1), "the control case reads")
    }
}
