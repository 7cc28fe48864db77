import ArgumentParser
import Foundation
import Observation
import SwitchboardKit

/// `call USER…`: rings, prints the call's progress, hangs up after `--hangup-after` seconds.
struct CallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "call", abstract: "Ring one or more users and print the call's progress.")

    @OptionGroup var connection: Connection
    @Argument(help: "Who to ring (user ids).") var users: [String]
    @Option(help: "Call type.") var type = "ringing"
    @Option(help: "Call id (default: a new random one).") var id: String?
    @Option(help: "Seconds to stay in the call once answered, then hang up (default: until the call ends).") var hangupAfter: Double?

    func run() async throws {
        let client = try connection.client()
        let model = await CallViewModel(client: client)
        let events = await client.events()
        try await client.connect()
        let callID = id ?? "c" + UUID().uuidString.prefix(8).lowercased()
        await model.startCall(callType: type, callId: callID, members: users, ring: true)
        if let error = await model.lastError { throw fail(error) }
        say("ringing \(users.joined(separator: ", ")) in \(type):\(callID)")
        let reporter = await Reporter(model: model, events: events)
        var hangup: Task<Void, Never>?
        await reporter.follow { state in
            if state == .inCall, hangup == nil, let hangupAfter {
                hangup = Task { @MainActor in
                    try? await Task.sleep(for: .milliseconds(Int(hangupAfter * 1000)))
                    say("hanging up")
                    await model.hangUp()
                }
            }
            // Done once idle and the call's end was printed (a rejected ring ends a moment later).
            return state == .idle && reporter.sawEnd
        }
        await hangup?.value
        await client.disconnect()
    }
}

/// `answer`: waits for incoming calls and accepts (or rejects with `--reject REASON`).
struct AnswerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "answer", abstract: "Wait for incoming calls and accept them (or reject).")

    @OptionGroup var connection: Connection
    @Option(help: "Reject instead, with this reason (decline, busy).") var reject: String?
    @Flag(help: "Stop after the first call.") var once = false

    func run() async throws {
        let client = try connection.client()
        let model = await CallViewModel(client: client)
        let events = await client.events()
        try await client.connect()
        say("waiting for calls as \(client.user.id)")
        let reporter = await Reporter(model: model, events: events)
        var answered = false
        await reporter.follow { state in
            if case .incoming = state {
                if let reject {
                    await model.rejectCall(reason: reject)
                    say("rejected (\(reject))")
                    answered = true
                } else {
                    await model.acceptCall()
                    if let error = model.lastError { say("error: \(error)") }
                }
            }
            if state == .inCall { answered = true }
            return once && answered && model.callingState == .idle
        }
        await client.disconnect()
    }
}

/// `meet ID`: joins a meeting and prints the participants as they change.
struct MeetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "meet", abstract: "Join a meeting and print its participants as they change.")

    @OptionGroup var connection: Connection
    @Argument(help: "Meeting id.") var id: String
    @Option(help: "Call type.") var type = "default"
    @Option(help: "Seconds to stay, then leave (default: until interrupted or the call ends).") var leaveAfter: Double?

    func run() async throws {
        let client = try connection.client()
        let controller = client.makeCallController(callType: type, callId: id)
        let call: Call
        do {
            call = try await controller.joinCall()
        } catch {
            throw fail(error)
        }
        let session = await call.ownSessionID ?? "?"
        say("joined \(type):\(id) as session \(session)")
        let first = await call.participants.map(\.userId)
        say("participants: \(first.joined(separator: ", "))")
        let events = await call.events
        let watcher = Task {
            var last = first
            for await event in events {
                let now = await call.participants.map(\.userId)
                if now != last, !now.isEmpty {
                    say("participants: \(now.joined(separator: ", "))")
                    last = now
                }
                let joined = await call.isJoined
                if event.type == "call.ended" || !joined { break }
            }
        }
        if let leaveAfter {
            try? await Task.sleep(for: .milliseconds(Int(leaveAfter * 1000)))
            watcher.cancel()
            do {
                try await controller.leave()
            } catch {
                throw fail(error)
            }
            say("left")
        } else {
            await watcher.value
        }
        await client.disconnect()
    }
}

/// Prints what changed in a call view model, one line each: the calling state and the
/// participants as they change (Observation), and the ring outcomes as their events arrive.
@MainActor
@Observable
final class Reporter {
    @ObservationIgnored let model: CallViewModel
    @ObservationIgnored var lastState: CallingState = .idle
    @ObservationIgnored var lastParticipants: [String] = []
    @ObservationIgnored var printer: Task<Void, Never>?
    /// Set once `call.ended` was printed.
    private(set) var sawEnd = false

    init(model: CallViewModel, events: AsyncStream<ClientEvent>) {
        self.model = model
        printer = Task { [weak self] in
            for await event in events {
                guard case .event(let frame) = event else { continue }
                switch frame.type {
                case "call.accepted": say("\(frame.data["user_id"]?.stringValue ?? "?") accepted")
                case "call.rejected": say("\(frame.data["user_id"]?.stringValue ?? "?") rejected (\(frame.data["reason"]?.stringValue ?? ""))")
                case "call.missed": say("missed")
                case "call.ended":
                    say("call ended (\(frame.data["reason"]?.stringValue ?? ""))")
                    self?.sawEnd = true
                default: break
                }
            }
        }
    }

    /// Reports each change and hands the new state to `step` until it returns `true`.
    func follow(_ step: @MainActor (CallingState) async -> Bool) async {
        while true {
            let state = report()
            if await step(state) { break }
            // Changed while `step` ran (it may accept or hang up): report before waiting. The
            // check and the tracking below run in one main-actor job, so no change slips between.
            if model.callingState != lastState || (state == .inCall && model.call?.participants.map(\.userId) != lastParticipants) { continue }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                withObservationTracking {
                    _ = model.callingState
                    _ = model.call?.participants
                    _ = sawEnd
                } onChange: {
                    continuation.resume()
                }
            }
            await Task.yield()
        }
        printer?.cancel()
    }

    private func report() -> CallingState {
        let state = model.callingState
        if state != lastState {
            switch state {
            case .incoming(let incoming): say("incoming call \(incoming.callID) from \(incoming.caller)")
            case .inCall: say("in call \(model.call?.callID.cid ?? "")")
            case .outgoing: say("calling…")
            case .reconnecting: say("reconnecting…")
            case .idle: say("idle")
            }
            lastState = state
        }
        if state == .inCall, let participants = model.call?.participants.map(\.userId), participants != lastParticipants {
            // An ended call empties its list just before the state turns idle: not worth a line.
            if !participants.isEmpty { say("participants: \(participants.joined(separator: ", "))") }
            lastParticipants = participants
        }
        return state
    }
}
