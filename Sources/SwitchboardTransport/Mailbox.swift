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
        /// Testing only: block the service thread until the semaphore is signalled, as a thread
        /// stuck in a callback would be (the watchdog and the shutdown must cope).
        case stall(DispatchSemaphore)
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
    /// Inbound backpressure: bytes delivered per socket and not yet reported handled, the
    /// sockets the service thread stopped reading, and those to read again.
    private let inboundLimit: Int
    private var unhandledBytes: [ConnectionID: Int] = [:]
    private var paused: Set<ConnectionID> = []
    private var resumable: [ConnectionID] = []

    init(outboxLimit: Int, inboundLimit: Int) {
        self.outboxLimit = outboxLimit
        self.inboundLimit = inboundLimit
    }

    /// What one delivered message counts against `inboundLimit`: its bytes plus the event's
    /// own footprint, so a flood of tiny frames is paced too.
    static func inboundCost(of messageBytes: Int) -> Int { messageBytes + 64 }

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

    /// Reports delivered events handled; sockets whose backlog fell to half the limit are
    /// handed back to the service thread to be read again.
    func handled(_ events: [TransportEvent]) {
        lock.lock()
        defer { lock.unlock() }
        var resumed = false
        for case .message(let id, let bytes, _) in events {
            guard let unhandled = unhandledBytes[id] else { continue }
            let left = unhandled - Self.inboundCost(of: bytes.count)
            unhandledBytes[id] = left
            if left <= inboundLimit / 2, paused.remove(id) != nil {
                resumable.append(id)
                resumed = true
            }
        }
        if resumed { wake?() }
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

    func take() -> (commands: [OutboundCommand], controls: [Control], resumable: [ConnectionID]) {
        lock.lock()
        defer { lock.unlock() }
        let taken = (commands, controls, resumable)
        commands = []
        controls = []
        resumable = []
        return taken
    }

    /// Counts a message handed to the application; returns `true` when the socket's backlog just
    /// passed the inbound limit, and the caller must stop reading it until it is resumable.
    func delivered(_ messageBytes: Int, on id: ConnectionID) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard let unhandled = unhandledBytes[id] else { return false }
        let backlog = unhandled + Self.inboundCost(of: messageBytes)
        unhandledBytes[id] = backlog
        guard backlog > inboundLimit, !paused.contains(id) else { return false }
        paused.insert(id)
        return true
    }

    func webSocketOpened(_ id: ConnectionID) {
        lock.lock()
        defer { lock.unlock() }
        pendingBytes[id] = 0
        unhandledBytes[id] = 0
        openWebSockets += 1
    }

    func webSocketClosed(_ id: ConnectionID) {
        lock.lock()
        defer { lock.unlock() }
        guard pendingBytes.removeValue(forKey: id) != nil else { return }
        overflowed.remove(id)
        unhandledBytes.removeValue(forKey: id)
        paused.remove(id)
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
