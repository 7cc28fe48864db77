import Foundation
import SwitchboardCore

/// The hand-over point between application threads and one service thread.
///
/// Application threads append commands and account bytes per connection under `lock`; the
/// service thread swaps the command list out when woken. Only `lws_cancel_service` is called
/// from other threads, and only while `lock` is held and the context is alive.
final class Mailbox: @unchecked Sendable {
    /// Commands the service thread executes besides the application's.
    enum Control: Sendable {
        /// Stop accepting; close every WebSocket with the code, giving each until the deadline.
        case drain(CloseCode, seconds: Int32)
    }

    /// The close reason of a connection whose outbox overflowed.
    static let overflowReason = "outbox full: the client is not reading"

    private let lock = NSCondition()
    private var commands: [OutboundCommand] = []
    private var controls: [Control] = []
    private var pendingBytes: [ConnectionID: Int] = [:]
    private var overflowed: Set<ConnectionID> = []
    private var wake: (() -> Void)?
    private var stopFlag = false
    var stopRequested: Bool { lock.withLock { stopFlag } }
    private var openWebSockets = 0
    private let outboxLimit: Int

    init(outboxLimit: Int) { self.outboxLimit = outboxLimit }

    // MARK: Application side

    /// Appends commands; returns connections refused for a full outbox.
    func post(_ batch: [OutboundCommand]) -> Set<ConnectionID> {
        lock.lock()
        defer { lock.unlock() }
        let wasEmpty = commands.isEmpty && controls.isEmpty
        var refused: Set<ConnectionID> = []
        for command in batch {
            let id = command.connection
            let frame: [UInt8]
            switch command {
            case .send(_, let bytes), .sendBinary(_, let bytes): frame = bytes
            default:
                commands.append(command)
                continue
            }
            guard let pending = pendingBytes[id], !overflowed.contains(id) else { continue }
            if pending + frame.count > outboxLimit {
                overflowed.insert(id)
                refused.insert(id)
                commands.append(.close(id, .policyViolation, reason: Self.overflowReason))
                continue
            }
            pendingBytes[id] = pending + frame.count
            commands.append(command)
        }
        if wasEmpty, !commands.isEmpty { wake?() }
        return refused
    }

    /// Queues a control command and wakes the service thread.
    func post(_ control: Control) {
        lock.lock()
        defer { lock.unlock() }
        controls.append(control)
        wake?()
    }

    /// Asks the service thread to leave its loop.
    func requestStop() {
        lock.lock()
        defer { lock.unlock() }
        stopFlag = true
        wake?()
    }

    /// Waits until no WebSocket is open or `deadline` passes; returns whether all closed.
    func waitForWebSocketsToClose(until deadline: Date) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        while openWebSockets > 0 {
            if !lock.wait(until: deadline) { return openWebSockets == 0 }
        }
        return true
    }

    var webSocketCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return openWebSockets
    }

    // MARK: Service thread side

    /// Installs (or, with `nil`, removes) the wake-up call for the live lws context.
    func setWake(_ wake: (() -> Void)?) {
        lock.lock()
        defer { lock.unlock() }
        self.wake = wake
    }

    func take() -> (commands: [OutboundCommand], controls: [Control], stop: Bool) {
        lock.lock()
        defer { lock.unlock() }
        let taken = (commands, controls, stopFlag)
        commands = []
        controls = []
        return taken
    }

    func webSocketOpened(_ id: ConnectionID) {
        lock.lock()
        defer { lock.unlock() }
        pendingBytes[id] = 0
        openWebSockets += 1
    }

    func webSocketClosed(_ id: ConnectionID) {
        lock.lock()
        defer { lock.unlock() }
        guard pendingBytes.removeValue(forKey: id) != nil else { return }
        overflowed.remove(id)
        openWebSockets -= 1
        if openWebSockets == 0 { lock.broadcast() }
    }

    func written(_ byteCount: Int, on id: ConnectionID) {
        guard byteCount > 0 else { return }
        lock.lock()
        defer { lock.unlock() }
        if let pending = pendingBytes[id] { pendingBytes[id] = pending - byteCount }
    }
}
