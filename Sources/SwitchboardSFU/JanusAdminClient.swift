import Foundation
import SwitchboardCore

/// Why a Janus admin request gave no usable answer.
public enum JanusError: Error, Sendable, Equatable {
    /// No answer within the timeout.
    case timeout
    /// Connection refused or reset, an HTTP error status, a body that is not Janus's JSON.
    case failed(String)
    /// Janus answered with an error (`{"janus":"error","error":{"code","reason"}}`), e.g. 403
    /// for a wrong admin secret.
    case refused(code: Int, reason: String)
}

/// A client of Janus's admin API (`POST {"janus": verb, "transaction", "admin_secret", …}` to
/// the admin endpoint). Each request is bounded by `timeout` and runs on the caller's task.
public struct JanusAdminClient: Sendable {
    let http: any HTTPPoster
    let timeout: Duration
    let transactionIDs: @Sendable () -> String

    public init(http: any HTTPPoster, timeout: Duration, transactionIDs: @escaping @Sendable () -> String = { UUID().uuidString }) {
        self.http = http
        self.timeout = timeout
        self.transactionIDs = transactionIDs
    }

    /// The number of Janus sessions in use (`list_sessions`): the load Switchboard places by,
    /// one session per connected participant.
    public func sessionCount(_ access: JanusAccess, secret: String) async throws(JanusError) -> Int {
        struct Sessions: Decodable { let sessions: [Ignored] }
        let answer: Sessions = try await request(access, secret: secret, verb: "list_sessions")
        return answer.sessions.count
    }

    /// The sessions whose handles were opened with one of `tokens` (`list_sessions`, then
    /// `list_handles` and `handle_info` per session): one request per session and handle, so
    /// only for the few tokens being revoked.
    public func sessions(using tokens: Set<String>, _ access: JanusAccess, secret: String) async throws(JanusError) -> [UInt64] {
        struct Sessions: Decodable { let sessions: [UInt64] }
        struct Handles: Decodable { let handles: [UInt64] }
        struct HandleInfo: Decodable {
            struct Info: Decodable { let token: String? }
            let info: Info
        }
        guard !tokens.isEmpty else { return [] }
        let all: Sessions = try await request(access, secret: secret, verb: "list_sessions")
        var found: [UInt64] = []
        for session in all.sessions {
            let handles: Handles
            do { handles = try await request(access, secret: secret, verb: "list_handles", path: "/\(session)") } catch .refused { continue }
            for handle in handles.handles {
                guard let info: HandleInfo = try? await request(access, secret: secret, verb: "handle_info", path: "/\(session)/\(handle)") else { continue }
                if let token = info.info.token, tokens.contains(token) {
                    found.append(session)
                    break
                }
            }
        }
        return found
    }

    /// Ends a Janus session at once: its handles leave their rooms and its media stops.
    public func destroySession(_ session: UInt64, _ access: JanusAccess, secret: String) async throws(JanusError) {
        let _: Ignored = try await request(access, secret: secret, verb: "destroy_session", path: "/\(session)")
    }

    /// Sends `verb` with `fields` and decodes a success answer as `T`.
    func request<T: Decodable>(
        _ access: JanusAccess, secret: String, verb: String, fields: [String: JSONValue] = [:], path: String = ""
    ) async throws(JanusError) -> T {
        let transaction = transactionIDs()
        var body = fields
        body["janus"] = .string(verb)
        body["transaction"] = .string(transaction)
        body["admin_secret"] = .string(secret)
        let encoded: [UInt8]
        do { encoded = Array(try JSONEncoder().encode(JSONValue.object(body))) } catch { throw .failed("request encoding failed") }
        let answer: (status: Int, body: [UInt8])
        do {
            answer = try await http.post(access.adminURL + path, body: encoded, timeout: timeout)
        } catch {
            switch error {
            case .timeout: throw .timeout
            case .failed(let reason): throw .failed(reason)
            }
        }
        guard answer.status == 200 else { throw .failed("HTTP status \(answer.status)") }
        return try Self.decode(answer.body, transaction: transaction)
    }

    /// Janus answers errors in a 200 body: `janus` is `error` and `error` holds code and reason.
    static func decode<T: Decodable>(_ bytes: [UInt8], transaction: String) throws(JanusError) -> T {
        let data = Data(bytes)
        let envelope: Envelope
        do { envelope = try JSONDecoder().decode(Envelope.self, from: data) } catch { throw .failed("the answer is not Janus JSON") }
        guard envelope.transaction == nil || envelope.transaction == transaction else {
            throw .failed("the answer is for another transaction")
        }
        if envelope.janus == "error" || envelope.error != nil {
            throw .refused(code: envelope.error?.code ?? 0, reason: envelope.error?.reason ?? "no reason given")
        }
        guard envelope.janus == "success" else { throw .failed("unexpected answer \(envelope.janus)") }
        do { return try JSONDecoder().decode(T.self, from: data) } catch { throw .failed("the answer lacks the expected fields") }
    }
}

/// The part of every Janus answer that says whether it succeeded.
private struct Envelope: Decodable {
    struct Failure: Decodable {
        let code: Int
        let reason: String?
    }
    let janus: String
    let transaction: String?
    let error: Failure?
}

/// Decodes any JSON value and keeps nothing (for counting array elements).
struct Ignored: Decodable {
    init(from decoder: any Decoder) throws {}
}
