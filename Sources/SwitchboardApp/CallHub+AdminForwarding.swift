import Dispatch
import Foundation
import Synchronization
import SwitchboardCore

/// The admin API's changes to calls other nodes run (ADR 0012, step 3.5): any node takes
/// `POST …/end` and `DELETE …/sessions/{session}`, and a change to a call another live node
/// runs is made there, by the owner's own admin path (one rule), and answered back.
extension CallHub {
    /// Sends the change to the call's owner and waits for its answer, at most
    /// ``ForwardedAdminWaits/timeout`` (then `unavailable`, naming the owner).
    func forwardAdmin(_ action: ForwardedAdminRequest.Action, _ cid: CallCID, to owner: CallOwner) throws(SwitchboardError) {
        guard let sharing = queue.sync(execute: { sharing }) else { throw SwitchboardError.heldElsewhere(cid, by: owner) }
        let ticket = newID()
        let wait = forwardedAdmin.begin(ticket)
        defer { forwardedAdmin.end(ticket) }
        metrics.forwardedOut.increment()
        sharing.send([owner.node: CallForwardBatch(adminRequests: [ForwardedAdminRequest(ticket: ticket, cid: cid, owner: owner, action: action)])])
        guard let answer = wait.answer(within: forwardedAdmin.timeout) else { throw SwitchboardError.ownerSilent(owner) }
        try answer.get()
    }

    /// Admin changes another node forwarded: each made as this node's own admin API makes it
    /// (never sent on: a call that moved meanwhile is refused, naming its owner), off the
    /// queue, and answered once committed.
    func runForwardedAdmin(_ requests: [ForwardedAdminRequest], from node: String) {
        guard !requests.isEmpty, let sharing else { return }
        metrics.forwardedIn.increment(by: requests.count)
        DispatchQueue.global().async { [self] in
            for request in requests {
                let result = Result { () throws(SwitchboardError) -> JSONValue in
                    try administer(request.action, request.cid, forwarding: false)
                    return .object([:])
                }
                sharing.send([node: CallForwardBatch(answers: [ForwardedCallAnswer(ticket: request.ticket, result: result)])])
            }
        }
    }

    /// Takes the answers to this node's forwarded admin changes out of `answers`; the rest
    /// are the gateway's (its clients' forwarded requests).
    func takeAdminAnswers(_ answers: [ForwardedCallAnswer]) -> [ForwardedCallAnswer] {
        answers.filter { !forwardedAdmin.answer($0) }
    }
}

/// Admin changes sent to other nodes and waiting for their answers.
final class ForwardedAdminWaits: Sendable {
    final class Wait: Sendable {
        private let done = DispatchSemaphore(value: 0)
        private let result = Mutex<Result<Void, SwitchboardError>?>(nil)

        func resolve(_ answer: Result<Void, SwitchboardError>) {
            result.withLock { $0 = answer }
            done.signal()
        }

        /// The answer, or `nil` when none came within `timeout`.
        func answer(within timeout: Duration) -> Result<Void, SwitchboardError>? {
            let (seconds, attoseconds) = timeout.components
            let nanoseconds = Int(clamping: seconds) &* 1_000_000_000 &+ Int(attoseconds / 1_000_000_000)
            guard done.wait(timeout: .now() + .nanoseconds(max(0, nanoseconds))) == .success else { return nil }
            return result.withLock { $0 }
        }
    }

    private let waits = Mutex<[String: Wait]>([:])
    private let limit = Mutex<Duration>(.milliseconds(Int64(CallGateway.forwardTimeout * 1000)))

    /// How long a change waits for its owner's answer (a client's forwarded request's, by default).
    var timeout: Duration {
        get { limit.withLock { $0 } }
        set { limit.withLock { $0 = newValue } }
    }

    func begin(_ ticket: String) -> Wait {
        let wait = Wait()
        waits.withLock { $0[ticket] = wait }
        return wait
    }

    func end(_ ticket: String) {
        _ = waits.withLock { $0.removeValue(forKey: ticket) }
    }

    /// Whether `answer` was for a change waiting here (now answered).
    func answer(_ answer: ForwardedCallAnswer) -> Bool {
        guard let wait = waits.withLock({ $0[answer.ticket] }) else { return false }
        wait.resolve(answer.result.map { _ in () })
        return true
    }
}
