import Foundation
import Logging

/// One client per logged-in user (after the product documents' `StreamVideo`): connects to
/// `/v1/connect`, keeps the socket (or opens it only for calls), resumes after drops with the
/// resume token and replays missed events, refreshes the token through `tokenProvider`, and
/// hands out a ``CallController`` per call.
public actor SwitchboardClient {
    public nonisolated let url: URL
    public nonisolated let user: UserInfo
    public nonisolated let config: ClientConfig
    let tokenProvider: @Sendable () async throws -> UserToken
    let logger: Logger
    let random: @Sendable () -> Double

    var token: UserToken
    public internal(set) var connectionState: ConnectionState = .disconnected
    /// `connection.ok` of the current connection.
    public internal(set) var connection: ConnectionInfo?
    var sequencer = EventSequencer()
    var pending: [Int: CheckedContinuation<Result<JSONValue, SwitchboardClientError>, Never>] = [:]
    /// What pending requests do with their answer as it is read (``request(_:data:applying:)``).
    var appliers: [Int: @Sendable (JSONValue) async -> Void] = [:]
    var nextRequestID = 1
    var outbound: AsyncStream<Outbound>.Continuation?
    var connectWaiters: [Int: CheckedContinuation<Result<Void, SwitchboardClientError>, Never>] = [:]
    var runTask: Task<Void, Never>?
    var refreshTask: Task<Result<UserToken, SwitchboardClientError>, Never>?
    /// Why the last socket was closed by the server, when it said (an error frame without id).
    var closingError: SwitchboardClientError?
    /// Whether the current socket got its `connection.ok`.
    var socketAuthenticated = false
    var calls: [CallID: Call] = [:]
    var listeners: [Int: AsyncStream<ClientEvent>.Continuation] = [:]
    var nextListener = 0

    /// `url` is the daemon's `ws(s)://host:port/v1/connect` (an `http(s)://host:port` base
    /// gets `/v1/connect` added). `random` (for backoff jitter) is injectable for tests.
    public init(
        url: URL, user: UserInfo, token: UserToken, config: ClientConfig = ClientConfig(),
        tokenProvider: @escaping @Sendable () async throws -> UserToken,
        logger: Logger = Logger(label: "switchboard.client"),
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.url = Self.connectURL(url)
        self.user = user
        self.token = token
        self.config = config
        self.tokenProvider = tokenProvider
        self.logger = logger
        self.random = random
    }

    /// What the socket's writer is handed.
    enum Outbound: Sendable {
        case text(String)
        /// Close the socket (a drop the client resumes from).
        case drop
    }

    static func connectURL(_ url: URL) -> URL {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        switch components.scheme {
        case "http": components.scheme = "ws"
        case "https": components.scheme = "wss"
        default: break
        }
        if components.path.isEmpty || components.path == "/" { components.path = "/v1/connect" }
        return components.url ?? url
    }

    /// Events of the client (connection changes, incoming calls, every server event). Each
    /// call is its own stream.
    public func events() -> AsyncStream<ClientEvent> {
        let (stream, continuation) = AsyncStream<ClientEvent>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        let key = nextListener
        nextListener += 1
        listeners[key] = continuation
        continuation.onTermination = { _ in Task { await self.removeListener(key) } }
        return stream
    }

    private func removeListener(_ key: Int) { listeners[key] = nil }

    func emit(_ event: ClientEvent) {
        for listener in listeners.values { listener.yield(event) }
    }

    /// Opens the socket and waits for `connection.ok`; with `persistingSocketConnection` the
    /// socket is then kept (reconnecting and resuming after drops) until ``disconnect()``.
    public func connect() async throws(SwitchboardClientError) {
        if case .connected = connectionState { return }
        if case .failed = connectionState { connectionState = .disconnected }
        if runTask == nil { runTask = Task { await self.runLoop() } }
        let key = nextRequestID
        nextRequestID += 1
        let timeout = config.requestTimeout
        let result = await withCheckedContinuation { continuation in
            connectWaiters[key] = continuation
            Task {
                try? await Task.sleep(for: timeout)
                self.connectWaiters.removeValue(forKey: key)?.resume(
                    returning: .failure(SwitchboardClientError(.timeout, "not connected within \(timeout); still trying")))
            }
        }
        try result.get()
    }

    /// Closes the socket and stops reconnecting. Sessions still in calls leave when the
    /// server's resume window passes.
    public func disconnect() async {
        let task = runTask
        runTask = nil
        outbound?.finish()
        outbound = nil
        task?.cancel()
        await task?.value
        setState(.disconnected)
        failPending(SwitchboardClientError(.disconnected, "the client disconnected"))
        resolveConnectWaiters(.failure(SwitchboardClientError(.disconnected, "the client disconnected")))
    }

    /// The controller of the call `callType:callId` (the same call object for the same id).
    public nonisolated func makeCallController(callType: String, callId: String) -> CallController {
        CallController(client: self, callID: CallID(type: callType, id: callId))
    }

    /// The observable call for `id`, made on first use.
    public func call(_ id: CallID) async -> Call {
        if let call = calls[id] { return call }
        let me = user.id
        let call = await MainActor.run { Call(callID: id, me: me) }
        if let raced = calls[id] { return raced }
        calls[id] = call
        return call
    }

    // MARK: Requests

    /// Sends one request and waits for its answer (`config.requestTimeout`), connecting first
    /// when the socket is not open.
    public func request(_ type: String, data: [String: JSONValue] = [:]) async throws(SwitchboardClientError) -> JSONValue {
        try await request(type, data: data, applying: nil)
    }

    /// ``request(_:data:)`` whose answer is handed to `applying` as it is read, before any frame
    /// after it: a call snapshot in an answer is applied before the events the server sent after
    /// it, never over them (as it would be by the caller, once it resumed).
    func request(
        _ type: String, data: [String: JSONValue], applying: (@Sendable (JSONValue) async -> Void)?
    ) async throws(SwitchboardClientError) -> JSONValue {
        if case .connected = connectionState {} else { try await connect() }
        guard let outbound else { throw SwitchboardClientError(.disconnected, "no socket") }
        let id = nextRequestID
        nextRequestID += 1
        let timeout = config.requestTimeout
        let result = await withCheckedContinuation { continuation in
            pending[id] = continuation
            appliers[id] = applying
            outbound.yield(.text(Wire.request(type: type, id: id, data: data)))
            Task {
                try? await Task.sleep(for: timeout)
                self.resolve(id, .failure(SwitchboardClientError(.timeout, "\(type): no answer within \(timeout)")))
            }
        }
        return try result.get()
    }

    func resolve(_ id: Int, _ result: Result<JSONValue, SwitchboardClientError>) {
        appliers[id] = nil
        pending.removeValue(forKey: id)?.resume(returning: result)
    }

    /// An answer read from the socket: applied where its request asked, then handed back.
    func answered(_ id: Int, _ data: JSONValue) async {
        if let apply = appliers.removeValue(forKey: id), pending[id] != nil { await apply(data) }
        resolve(id, .success(data))
    }

    func failPending(_ error: SwitchboardClientError) {
        let waiting = pending
        pending = [:]
        appliers = [:]
        for continuation in waiting.values { continuation.resume(returning: .failure(error)) }
    }

    func resolveConnectWaiters(_ result: Result<Void, SwitchboardClientError>) {
        let waiting = connectWaiters
        connectWaiters = [:]
        for waiter in waiting.values { waiter.resume(returning: result) }
    }

    func setState(_ state: ConnectionState) {
        guard state != connectionState else { return }
        connectionState = state
        emit(.connectionChanged(state))
    }

    // MARK: Token

    /// A fresh token from the provider: one provider call per expiry, however many ask at once;
    /// retried with backoff, then ``SwitchboardClientError/Code/tokenProviderFailed``.
    func freshToken() async -> Result<UserToken, SwitchboardClientError> {
        if let refreshTask { return await refreshTask.value }
        let provider = tokenProvider
        let attempts = max(1, config.tokenProviderAttempts)
        let backoff = config.backoff
        let random = random
        let task = Task<Result<UserToken, SwitchboardClientError>, Never> {
            var lastError = ""
            for attempt in 0..<attempts {
                do {
                    return .success(try await provider())
                } catch {
                    lastError = "\(error)"
                    if attempt + 1 < attempts { try? await Task.sleep(for: backoff.delay(attempt: attempt, unit: random())) }
                }
            }
            return .failure(SwitchboardClientError(.tokenProviderFailed, "the token provider failed \(attempts) times: \(lastError)"))
        }
        refreshTask = task
        let result = await task.value
        refreshTask = nil
        if case .success(let fresh) = result { token = fresh }
        return result
    }

    /// Answers `connection.token_expiring`: a new token from the provider, handed to the server
    /// with `token.refresh`.
    func refreshOnLiveConnection() async {
        switch await freshToken() {
        case .success(let fresh):
            do {
                _ = try await request("token.refresh", data: ["token": .string(fresh.rawValue)])
                logger.debug("token refreshed")
            } catch {
                logger.notice("token.refresh failed; the next reconnect uses the new token", metadata: ["error": "\(error.code)"])
            }
        case .failure(let error):
            logger.error("token provider failed", metadata: ["error": "\(error.message)"])
        }
    }
}
