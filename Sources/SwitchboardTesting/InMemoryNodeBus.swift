import Foundation
import SwitchboardCore

/// The in-memory twin of `PostgresBus`: the nodes of one ``Network`` send each other messages,
/// delivered in order to a node while it listens and lost while it does not, as notifications
/// are. A test can cut a node's listening (its `run` reports it `lost` and listens again once
/// restored) and make its sends fail.
public final class InMemoryNodeBus: NodeBus, @unchecked Sendable {
    /// The nodes, their listeners and the faults a test set.
    public final class Network: @unchecked Sendable {
        private let lock = NSLock()
        private var listeners: [String: AsyncStream<NodeMessage>.Continuation] = [:]
        private var cut: Set<String> = []
        private var waiting: [String: [(id: UUID, continuation: CheckedContinuation<Void, Never>)]] = [:]
        private var refusing: Set<String> = []
        private var log: [(to: String, message: NodeMessage)] = []

        public init() {}

        /// A bus for `node` on this network.
        public func bus(for node: String) -> InMemoryNodeBus { InMemoryNodeBus(node: node, network: self) }

        /// Every message sent so far (delivered or lost), in order.
        public var sent: [(to: String, message: NodeMessage)] { lock.withLock { log } }

        /// Whether `node` listens now.
        public func listens(_ node: String) -> Bool { lock.withLock { listeners[node] != nil } }

        /// Ends `node`'s listening (its `run` reports it lost) until ``restore(_:)``.
        public func cutListening(_ node: String) {
            let listener = lock.withLock { () -> AsyncStream<NodeMessage>.Continuation? in
                cut.insert(node)
                return listeners.removeValue(forKey: node)
            }
            listener?.finish()
        }

        /// Lets `node` listen again.
        public func restore(_ node: String) {
            let resumed = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
                cut.remove(node)
                return (waiting.removeValue(forKey: node) ?? []).map(\.continuation)
            }
            for continuation in resumed { continuation.resume() }
        }

        /// From now on (or no longer) `node`'s sends fail.
        public func refuseSends(from node: String, _ refuse: Bool = true) {
            lock.withLock {
                if refuse { refusing.insert(node) } else { refusing.remove(node) }
            }
        }

        fileprivate func send(_ message: NodeMessage, to node: String) throws {
            let listener = try lock.withLock { () throws -> AsyncStream<NodeMessage>.Continuation? in
                guard !refusing.contains(message.from) else { throw SwitchboardError(.unavailable, "the bus refused the send") }
                log.append((node, message))
                return listeners[node]
            }
            listener?.yield(message)
        }

        /// The stream of messages to `node`, or `nil` while its listening is cut.
        fileprivate func listen(_ node: String) -> AsyncStream<NodeMessage>? {
            lock.withLock {
                guard !cut.contains(node) else { return nil }
                let (stream, continuation) = AsyncStream.makeStream(of: NodeMessage.self)
                listeners[node]?.finish()
                listeners[node] = continuation
                return stream
            }
        }

        fileprivate func stopListening(_ node: String) {
            let listener = lock.withLock { listeners.removeValue(forKey: node) }
            listener?.finish()
        }

        /// Returns once `node` may listen again (at once if it may now), or the task is cancelled.
        fileprivate func restored(_ node: String) async {
            let id = UUID()
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let now = lock.withLock { () -> Bool in
                        guard cut.contains(node), !Task.isCancelled else { return true }
                        waiting[node, default: []].append((id, continuation))
                        return false
                    }
                    if now { continuation.resume() }
                }
            } onCancel: {
                let cancelled = lock.withLock { () -> CheckedContinuation<Void, Never>? in
                    guard let index = waiting[node]?.firstIndex(where: { $0.id == id }) else { return nil }
                    return waiting[node]?.remove(at: index).continuation
                }
                cancelled?.resume()
            }
        }
    }

    public let node: String
    private let network: Network

    init(node: String, network: Network) {
        self.node = node
        self.network = network
    }

    public func run(listening: @Sendable () async -> Void, lost: @Sendable () async -> Void, deliver: @Sendable (NodeMessage) async -> Void) async {
        while !Task.isCancelled {
            guard let stream = network.listen(node) else {
                await network.restored(node)
                continue
            }
            await listening()
            for await message in stream { await deliver(message) }
            guard !Task.isCancelled else { break }
            await lost()
        }
        network.stopListening(node)
    }

    public func send(_ message: NodeMessage, to node: String) async throws {
        try network.send(message, to: node)
    }

    public func close() async {}
}
