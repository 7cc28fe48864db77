import Foundation
import SwitchboardCore
import XCTest

/// The scheduler tests' clock: `seconds` after 2023-11-14T22:13:20Z.
func hookTime(_ seconds: TimeInterval) -> Date { Date(timeIntervalSince1970: 1_700_000_000 + seconds) }

/// A message of `lane` with `seq`, created at `created` seconds after ``hookTime(_:)``'s origin.
func webhookMessage(_ id: String, lane: String = "default:a", seq: Int64, created: TimeInterval = 0) -> WebhookMessage {
    WebhookMessage(
        id: id, type: .participantJoined, createdAt: hookTime(created), lane: lane, seq: seq,
        data: .object(["call_cid": .string(lane), "seq": .number(Double(seq))]))
}

/// The first delivery of a message to `endpoint`.
func pendingWebhook(_ id: String, lane: String = "default:a", seq: Int64, endpoint: String = "ops", created: TimeInterval = 0) -> PendingWebhook {
    let message = webhookMessage(id, lane: lane, seq: seq, created: created)
    return PendingWebhook(delivery: WebhookDelivery(message, endpoint: endpoint), message: message)
}

extension [PendingWebhook] {
    /// "endpoint/message" of each attempt, in order.
    var names: [String] { map { "\($0.delivery.endpoint)/\($0.delivery.messageID)" } }
}

extension [CallMutation] {
    /// The deliveries saved, in order.
    var savedDeliveries: [WebhookDelivery] {
        compactMap { if case .saveWebhookDelivery(let delivery) = $0 { delivery } else { nil } }
    }

    /// The endpoint states saved, in order.
    var savedEndpoints: [WebhookEndpointState] {
        compactMap { if case .saveWebhookEndpoint(let state) = $0 { state } else { nil } }
    }
}

extension WebhookScheduler {
    /// Reports an attempt and returns the one delivery saved.
    mutating func finish(
        _ id: String, _ outcome: Outcome, to endpoint: String = "ops", now: Date, random: Double = 0,
        file: StaticString = #filePath, line: UInt = #line
    ) -> WebhookDelivery? {
        let saved = finished(messageID: id, endpoint: endpoint, outcome: outcome, now: now, random: random).savedDeliveries
        XCTAssertEqual(saved.count, 1, "one delivery saved per outcome", file: file, line: line)
        return saved.first
    }
}
