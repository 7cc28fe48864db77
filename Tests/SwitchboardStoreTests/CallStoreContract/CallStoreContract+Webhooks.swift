import Foundation
import SwitchboardCore
import XCTest

/// The webhook outbox, endpoint state and push devices (`WebhookStore`), written by call batches,
/// and the call's webhook sequence (`CallRecord.eventSeq`).
extension CallStoreContract {
    /// A store of the contract, which every implementation makes a ``WebhookStore`` too.
    func makeOutboxStore(file: StaticString = #filePath, line: UInt = #line) throws -> any CallStore & WebhookStore {
        try XCTUnwrap(try makeStore() as? any CallStore & WebhookStore, "not a WebhookStore", file: file, line: line)
    }

    func message(_ id: String, lane: String = "default:c1", seq: Int64 = 1, at offset: Int = 0, type: WebhookEventType = .callCreated)
        -> WebhookMessage
    {
        WebhookMessage(
            id: id, type: type, createdAt: date(offset), lane: lane, seq: seq,
            data: .object(["call_cid": .string(lane), "seq": .number(Double(seq)), "note": .string("✓ \"q\"")]))
    }

    func pendingOrder(_ store: any WebhookStore) throws -> [String] {
        try store.pendingWebhooks().map { "\($0.message.id)>\($0.delivery.endpoint)" }
    }

    func ids(_ page: WebhookDeliveryPage) -> [String] { page.deliveries.map { "\($0.messageID)>\($0.endpoint)" } }

    // MARK: - The outbox

    /// Each endpoint gets a pending delivery due at once; the worker reads them by lane, then
    /// place in the lane, then endpoint, whatever order the batches came in.
    func enqueuedWebhooksArePendingInLaneOrder() throws {
        let store = try makeOutboxStore()
        XCTAssertEqual(try store.pendingWebhooks(), [])
        let ring = message("msg_2", lane: "default:c1", seq: 2, at: 5, type: .callRing)
        try store.apply([.saveCall(call("c1")), .enqueueWebhook(ring, endpoints: ["ops", "billing"])])
        try store.apply([
            .enqueueWebhook(message("msg_9", lane: "sfu:sfu-a", seq: 1_800_000_003_000, at: 3, type: .sfuDown), endpoints: ["ops"]),
            .enqueueWebhook(message("msg_1", lane: "default:c1", seq: 1, at: 4), endpoints: ["ops", "billing"]),
            .enqueueWebhook(message("msg_5", lane: "default:a0", seq: 7, at: 9), endpoints: ["ops"]),
            .enqueueWebhook(message("msg_6", lane: "default:c2", seq: 1, at: 1), endpoints: []),
        ])
        XCTAssertEqual(
            try pendingOrder(store),
            ["msg_5>ops", "msg_1>billing", "msg_1>ops", "msg_2>billing", "msg_2>ops", "msg_9>ops"],
            "lanes by name, then seq, then endpoint; a message for no endpoint is never pending")

        let pending = try XCTUnwrap(try store.webhook(messageID: "msg_2", endpoint: "billing"))
        XCTAssertEqual(pending.message, ring, "the message with its data as it was enqueued")
        XCTAssertEqual(pending.delivery, WebhookDelivery(ring, endpoint: "billing"))
        XCTAssertEqual(pending.delivery.status, .pending)
        XCTAssertEqual(pending.delivery.attempts, 0)
        XCTAssertEqual(pending.delivery.nextAttemptAt, date(5), "due at once")
        XCTAssertEqual(try store.pendingWebhooks().first { $0.message.id == "msg_9" }?.message.type, .sfuDown)
        XCTAssertNil(try store.webhook(messageID: "msg_2", endpoint: "nobody"))
        XCTAssertNil(try store.webhook(messageID: "msg_6", endpoint: "ops"))
        XCTAssertNil(try store.webhook(messageID: "msg_404", endpoint: "ops"))

        // A message is written once: the same id enqueued again keeps its first message.
        var again = ring
        again.data = .object(["other": .bool(true)])
        try store.apply([.enqueueWebhook(again, endpoints: ["audit"])])
        XCTAssertEqual(try store.webhook(messageID: "msg_2", endpoint: "audit")?.message, ring)
    }

    /// Attempt outcomes replace the delivery row (however many come before a read: a fold keeps
    /// the last); a delivered one leaves the pending list, a dead one is listed as dead.
    func deliveryUpdatesReplaceTheRowAndDeliveredOrDeadLeavePending() throws {
        let store = try makeOutboxStore()
        let first = message("msg_1", seq: 1, at: 0)
        let second = message("msg_2", seq: 2, at: 1)
        try store.apply([.enqueueWebhook(first, endpoints: ["ops", "billing"]), .enqueueWebhook(second, endpoints: ["ops"])])

        var failing = WebhookDelivery(first, endpoint: "ops")
        failing.attempts = 1
        failing.lastAttemptAt = date(2)
        failing.nextAttemptAt = date(7)
        failing.lastStatus = 503
        failing.lastError = "HTTP 503"
        try store.apply([.saveWebhookDelivery(failing)])
        var delivered = failing
        delivered.attempts = 2
        delivered.status = .delivered
        delivered.lastAttemptAt = date(7)
        delivered.nextAttemptAt = nil
        delivered.lastStatus = 204
        delivered.lastError = nil
        var dead = WebhookDelivery(first, endpoint: "billing")
        dead.status = .dead
        dead.attempts = 9
        dead.lastAttemptAt = date(3600)
        dead.nextAttemptAt = nil
        dead.lastError = "timed out"
        try store.apply([.saveWebhookDelivery(delivered)])
        try store.apply([.saveWebhookDelivery(dead)])

        XCTAssertEqual(try store.webhook(messageID: "msg_1", endpoint: "ops")?.delivery, delivered)
        XCTAssertEqual(try store.webhook(messageID: "msg_1", endpoint: "billing")?.delivery, dead)
        XCTAssertNil(dead.lastStatus, "no answer at all: no status")
        XCTAssertEqual(try pendingOrder(store), ["msg_2>ops"])
        XCTAssertEqual(try store.listDeliveries(WebhookDeliveryQuery(status: .dead)).deliveries, [dead])
        XCTAssertEqual(try store.listDeliveries(WebhookDeliveryQuery(status: .delivered)).deliveries, [delivered])
        XCTAssertEqual(ids(try store.listDeliveries(WebhookDeliveryQuery(status: .pending))), ["msg_2>ops"])

        // An admin's retry makes a dead delivery pending again, in its lane's place.
        var retried = dead
        retried.status = .pending
        retried.nextAttemptAt = date(3700)
        try store.apply([.saveWebhookDelivery(retried)])
        XCTAssertEqual(try pendingOrder(store), ["msg_1>billing", "msg_2>ops"])
        XCTAssertEqual(try store.pendingWebhooks().first?.delivery, retried)
        XCTAssertEqual(try store.listDeliveries(WebhookDeliveryQuery(status: .dead)).deliveries, [])
    }

    /// Newest first by creation time, then message id, then endpoint; filters by status, endpoint
    /// and call; pages neither repeat nor skip; the cursor is opaque and URL-safe.
    func listDeliveriesPagesNewestFirstWithFilters() throws {
        let store = try makeOutboxStore()
        var batch: [CallMutation] = []
        // Twelve messages over two calls and an SFU, two at a time sharing a creation time.
        for index in 0..<12 {
            let lane = ["default:c1", "default:c2", "sfu:sfu-a"][index % 3]
            let sent = message(String(format: "msg_%02d", index), lane: lane, seq: Int64(index), at: index / 2 * 10)
            batch.append(.enqueueWebhook(sent, endpoints: ["ops", "billing"]))
        }
        try store.apply(batch)
        var dead = WebhookDelivery(message("msg_04", lane: "default:c2", seq: 4, at: 20), endpoint: "ops")
        dead.status = .dead
        var delivered = WebhookDelivery(message("msg_07", lane: "default:c2", seq: 7, at: 30), endpoint: "ops")
        delivered.status = .delivered
        try store.apply([.saveWebhookDelivery(dead), .saveWebhookDelivery(delivered)])

        let everything = (0..<12).reversed().flatMap { index in
            [String(format: "msg_%02d>ops", index), String(format: "msg_%02d>billing", index)]
        }
        func allPages(_ query: WebhookDeliveryQuery) throws -> [String] {
            var query = query
            var seen: [String] = []
            for _ in 0..<50 {
                let page = try store.listDeliveries(query)
                XCTAssertLessThanOrEqual(page.deliveries.count, query.limit)
                seen += ids(page)
                guard let next = page.next else { return seen }
                XCTAssertEqual(page.deliveries.count, query.limit, "only the last page is short")
                XCTAssertNil(next.rangeOfCharacter(from: CharacterSet(charactersIn: "+/=%&?# ")), next)
                query.cursor = next
            }
            XCTFail("pages never end")
            return seen
        }
        XCTAssertEqual(try allPages(WebhookDeliveryQuery(limit: 1000)), everything)
        for limit in [1, 3, 5, 24] {
            XCTAssertEqual(try allPages(WebhookDeliveryQuery(limit: limit)), everything, "limit \(limit)")
        }
        XCTAssertNil(try store.listDeliveries(WebhookDeliveryQuery(limit: 24)).next, "an exact last page has no next")

        let c2 = everything.filter { ["01", "04", "07", "10"].contains(String($0.dropFirst(4).prefix(2))) }
        XCTAssertEqual(try allPages(WebhookDeliveryQuery(cid: cid("c2"), limit: 3)), c2)
        XCTAssertEqual(try allPages(WebhookDeliveryQuery(endpoint: "billing", limit: 5)), everything.filter { $0.hasSuffix(">billing") })
        XCTAssertEqual(
            try allPages(WebhookDeliveryQuery(status: .pending, endpoint: "ops", cid: cid("c2"), limit: 1)), ["msg_10>ops", "msg_01>ops"])
        XCTAssertEqual(try allPages(WebhookDeliveryQuery(status: .dead, limit: 2)), ["msg_04>ops"])
        XCTAssertEqual(try allPages(WebhookDeliveryQuery(endpoint: "OPS")), [], "endpoint names are case-sensitive")
        XCTAssertEqual(try allPages(WebhookDeliveryQuery(cid: cid("c3"))), [])

        XCTAssertEqual(try store.listDeliveries(WebhookDeliveryQuery(limit: 0)).deliveries.count, 1, "the limit is clamped to 1…1000")
        XCTAssertEqual(try store.listDeliveries(WebhookDeliveryQuery(limit: 5000)).deliveries.count, 24)
        for bad in ["", "not a cursor", "W10", "WyJ4IiwieSIsInoiXQ", "!!!"] {
            assertSwitchboardError(.invalidRequest, try store.listDeliveries(WebhookDeliveryQuery(cursor: bad)), bad)
        }
    }

    // MARK: - Endpoints

    func endpointStatesUpsertByName() throws {
        let store = try makeOutboxStore()
        XCTAssertEqual(try store.webhookEndpointStates(), [])
        let rotated = WebhookEndpointState(
            name: "ops", secret: "whsec_new", previousSecret: "whsec_old", previousUntil: date(86_400), disabledAt: nil,
            configuredDigest: WebhookSignature.digest(ofConfiguredSecret: "whsec_old"))
        let gone = WebhookEndpointState(name: "billing", disabledAt: date(60))
        try store.apply([.saveWebhookEndpoint(rotated), .saveWebhookEndpoint(gone)])
        XCTAssertEqual(try store.webhookEndpointStates(), [gone, rotated], "by name")

        let enabled = WebhookEndpointState(name: "billing")
        var rotatedAgain = rotated
        rotatedAgain.secret = "whsec_newer"
        rotatedAgain.previousSecret = "whsec_new"
        rotatedAgain.previousUntil = date(90_000)
        rotatedAgain.configuredDigest = nil
        try store.apply([.saveWebhookEndpoint(enabled)])
        try store.apply([.saveWebhookEndpoint(rotatedAgain)])
        XCTAssertEqual(try store.webhookEndpointStates(), [enabled, rotatedAgain])
        XCTAssertNil(try store.webhookEndpointStates().first?.disabledAt, "enabled again")
    }

    // MARK: - Devices

    func devicesAreKeptPerUserOldestFirstAndATokenHasOneOwner() throws {
        let store = try makeOutboxStore()
        func device(_ name: String, _ provider: DeviceProvider, _ token: String, at offset: Int) -> DeviceRecord {
            DeviceRecord(userID: user(name), provider: provider, token: token, createdAt: date(offset))
        }
        let phone = device("alice", .apns, "apns-1", at: 20)
        let voip = device("alice", .apnsVoIP, "voip-1", at: 10)
        let browser = device("alice", .webpush, #"{"endpoint":"https://push/1","keys":{}}"#, at: 20)
        // Its token sorts first, its provider does not.
        let tablet = device("alice", .fcm, "0-fcm", at: 20)
        let bobs = device("bob", .fcm, "fcm-1", at: 5)
        try store.apply([.saveDevice(phone), .saveDevice(voip), .saveDevice(browser), .saveDevice(bobs), .saveDevice(tablet)])
        XCTAssertEqual(try store.devices(of: user("alice")), [voip, tablet, phone, browser], "oldest first, ties by token")
        XCTAssertEqual(try store.devices(of: user("bob")), [bobs])
        XCTAssertEqual(try store.devices(of: user("carol")), [])
        XCTAssertEqual(try store.loadLiveState().devices, [bobs, voip, tablet, phone, browser])

        // The phone is sold: its token, registered again by carol, is hers alone now.
        let carols = device("carol", .apns, "apns-1", at: 30)
        // The same token text under another provider is another device (at the same time: by provider).
        let sameText = device("bob", .fcm, "apns-1", at: 30)
        try store.apply([.saveDevice(sameText), .saveDevice(carols)])
        XCTAssertEqual(try store.devices(of: user("alice")), [voip, tablet, browser])
        XCTAssertEqual(try store.devices(of: user("carol")), [carols])
        XCTAssertEqual(try store.devices(of: user("bob")), [bobs, sameText])

        try store.apply([
            .deleteDevice(voip.key), .deleteDevice(DeviceKey(provider: .fcm, token: "never-registered")),
            .deleteDevice(DeviceKey(provider: .apnsVoIP, token: "fcm-1")),
        ])
        XCTAssertEqual(try store.devices(of: user("alice")), [tablet, browser])
        XCTAssertEqual(try store.loadLiveState().devices, [bobs, tablet, browser, carols, sameText])
        // Deleted and registered again in one batch: the last mutation wins.
        try store.apply([.deleteDevice(bobs.key), .saveDevice(bobs), .saveDevice(voip), .deleteDevice(voip.key)])
        XCTAssertEqual(try store.devices(of: user("bob")), [bobs, sameText])
        XCTAssertEqual(try store.devices(of: user("alice")), [tablet, browser])
    }

    // MARK: - The call's webhook sequence

    func eventSeqRoundTripsWithItsCall() throws {
        let store = try makeOutboxStore()
        var numbered = call("c1", at: 3)
        numbered.eventSeq = 41
        try store.apply([.saveCall(numbered), .saveCall(call("c0"))])
        XCTAssertEqual(try store.loadCall(cid("c1"))?.call.eventSeq, 41)
        XCTAssertEqual(try store.loadCall(cid("c0"))?.call.eventSeq, 0, "0 before the first message")
        numbered.eventSeq = Int64(1) << 40
        try store.apply([.saveCall(numbered), .enqueueWebhook(message("msg_1", seq: numbered.eventSeq), endpoints: ["ops"])])
        XCTAssertEqual(try store.loadLiveState().calls, [call("c0"), numbered])
        XCTAssertEqual(try store.loadCall(cid("c1"))?.call, numbered)
        XCTAssertEqual(try store.callDetail(cid("c1"), eventLimit: 0)?.call.eventSeq, Int64(1) << 40)
        XCTAssertEqual(try store.listCalls(CallQuery()).calls.first, numbered)
        XCTAssertEqual(try store.pendingWebhooks().first?.message.seq, Int64(1) << 40)
    }

    // MARK: - All or nothing

    /// A NUL in any of the outbox's or a device's free text refuses the batch whole: nothing of
    /// it, call rows included, is stored.
    func aNULInAWebhookOrDeviceFieldRefusesTheWholeBatch() throws {
        let store = try makeOutboxStore()
        let kept = DeviceRecord(userID: user("alice"), provider: .apns, token: "apns-0", createdAt: date(0))
        try store.apply([.saveCall(call("c0")), .saveDevice(kept)])
        let before = try store.loadLiveState()

        var badError = WebhookDelivery(message("msg_0"), endpoint: "ops")
        badError.lastError = "cut\u{0}off"
        let refusals: [(CallMutation, String)] = [
            (.saveDevice(DeviceRecord(userID: user("bob"), provider: .fcm, token: "fcm\u{0}1", createdAt: date(1))), "device token"),
            // Bound as a C string, `apns-0\0x` would delete `apns-0`.
            (.deleteDevice(DeviceKey(provider: .apns, token: "apns-0\u{0}x")), "device token"),
            (.enqueueWebhook(message("msg\u{0}1"), endpoints: ["ops"]), "webhook message id"),
            (.enqueueWebhook(message("msg_1"), endpoints: ["ops", "bill\u{0}ing"]), "webhook endpoint"),
            (.saveWebhookDelivery(badError), "webhook last_error"),
            (.saveWebhookEndpoint(WebhookEndpointState(name: "ops", secret: "whsec\u{0}")), "webhook secret"),
        ]
        for (bad, field) in refusals {
            var changed = call("c0")
            changed.eventSeq = 3
            let batch: [CallMutation] = [
                .saveCall(changed), .saveCall(call("c1")), .enqueueWebhook(message("msg_2"), endpoints: ["ops"]),
                .saveWebhookEndpoint(WebhookEndpointState(name: "ops", disabledAt: date(5))), .deleteDevice(kept.key),
                .saveDevice(DeviceRecord(userID: user("bob"), provider: .fcm, token: "fcm-2", createdAt: date(2))), bad,
            ]
            assertSwitchboardError(
                SwitchboardError(.invalidRequest, "call store: \(field) must not contain NUL characters"), try store.apply(batch), field)
            XCTAssertEqual(try store.loadLiveState(), before, field)
            XCTAssertEqual(try store.loadLiveState().devices, [kept], field)
            XCTAssertNil(try store.loadCall(cid("c1")), field)
            XCTAssertEqual(try store.pendingWebhooks(), [], field)
            XCTAssertEqual(try store.listDeliveries(WebhookDeliveryQuery()).deliveries, [], field)
            XCTAssertEqual(try store.webhookEndpointStates(), [], field)
            XCTAssertEqual(try store.devices(of: user("bob")), [], field)
        }
        // JSON data escapes a NUL, so a message's data may hold one.
        var withNUL = message("msg_3")
        withNUL.data = .object(["k\u{0}": .string("v\u{0}")])
        try store.apply([.enqueueWebhook(withNUL, endpoints: ["ops"])])
        XCTAssertEqual(try store.webhook(messageID: "msg_3", endpoint: "ops")?.message, withNUL)
    }

    /// Stored as the store stores every time and JSON document: to the millisecond, as its text parses.
    func webhookTimesAndDataReadBackAsStored() throws {
        let store = try makeOutboxStore()
        let precise = Date(timeIntervalSince1970: 1_800_000_000.123_4)
        var sent = message("msg_1")
        sent.createdAt = precise
        sent.data = .object(["level": .number(.nan), "n": .number(1e300)])
        var state = WebhookEndpointState(name: "ops", previousUntil: precise, disabledAt: precise.addingTimeInterval(0.000_6))
        let device = DeviceRecord(userID: user("alice"), provider: .fcm, token: "t", createdAt: precise)
        try store.apply([.enqueueWebhook(sent, endpoints: ["ops"]), .saveWebhookEndpoint(state), .saveDevice(device)])

        let pending = try XCTUnwrap(try store.pendingWebhooks().first)
        assertTime(pending.message.createdAt, 1_800_000_000.123)
        assertTime(pending.delivery.createdAt, 1_800_000_000.123)
        assertTime(pending.delivery.nextAttemptAt, 1_800_000_000.123)
        XCTAssertEqual(pending.message.data, .object(["level": .null, "n": .number(1e300)]), "a non-finite number is null")
        state = try XCTUnwrap(try store.webhookEndpointStates().first)
        assertTime(state.previousUntil, 1_800_000_000.123)
        assertTime(state.disabledAt, 1_800_000_000.124)
        assertTime(try store.devices(of: user("alice")).first?.createdAt, 1_800_000_000.123)
    }

    // MARK: - Retention

    /// Pruning removes old delivered and dead deliveries, oldest first up to the limit, and the
    /// messages they leave without a delivery; pending ones and newer ones stay.
    func pruningRemovesOldFinishedDeliveriesAndTheirMessagesOnly() throws {
        let store = try makeOutboxStore()
        let old = message("msg_old", seq: 1, at: 0)
        let shared = message("msg_shared", seq: 2, at: 1)
        let pendingOld = message("msg_pending", seq: 3, at: 2)
        let recent = message("msg_recent", seq: 4, at: 100)
        try store.apply([
            .enqueueWebhook(old, endpoints: ["ops"]), .enqueueWebhook(shared, endpoints: ["ops", "billing"]),
            .enqueueWebhook(pendingOld, endpoints: ["ops"]), .enqueueWebhook(recent, endpoints: ["ops"]),
        ])
        func finished(_ message: WebhookMessage, _ endpoint: String, _ status: WebhookDeliveryStatus) -> CallMutation {
            var delivery = WebhookDelivery(message, endpoint: endpoint)
            delivery.status = status
            delivery.attempts = 1
            return .saveWebhookDelivery(delivery)
        }
        try store.apply([
            finished(old, "ops", .delivered), finished(shared, "ops", .dead), finished(recent, "ops", .delivered),
        ])

        XCTAssertEqual(try store.pruneWebhooks(createdBefore: date(50), limit: 1), 1, "the limit holds")
        XCTAssertNil(try store.webhook(messageID: "msg_old", endpoint: "ops"), "the oldest goes first")
        XCTAssertNotNil(try store.webhook(messageID: "msg_shared", endpoint: "ops"))
        XCTAssertEqual(try store.pruneWebhooks(createdBefore: date(50), limit: 100), 1)
        XCTAssertNil(try store.webhook(messageID: "msg_shared", endpoint: "ops"))
        XCTAssertEqual(
            try store.webhook(messageID: "msg_shared", endpoint: "billing")?.message, shared,
            "a message keeps its row while another endpoint's delivery of it is pending")
        XCTAssertEqual(try pendingOrder(store), ["msg_shared>billing", "msg_pending>ops"])
        XCTAssertNotNil(try store.webhook(messageID: "msg_recent", endpoint: "ops"), "newer than the cutoff: kept")
        XCTAssertEqual(try store.pruneWebhooks(createdBefore: date(50), limit: 100), 0)
        XCTAssertEqual(ids(try store.listDeliveries(WebhookDeliveryQuery())), ["msg_recent>ops", "msg_pending>ops", "msg_shared>billing"])

        // Once its last delivery is finished and old, the message goes too: enqueuing the same
        // id again makes a new message, not the pruned one.
        try store.apply([finished(shared, "billing", .delivered)])
        XCTAssertEqual(try store.pruneWebhooks(createdBefore: date(50), limit: 100), 1)
        var reborn = shared
        reborn.data = .object(["again": .bool(true)])
        try store.apply([.enqueueWebhook(reborn, endpoints: ["billing"])])
        XCTAssertEqual(try store.webhook(messageID: "msg_shared", endpoint: "billing")?.message, reborn)
    }
}
