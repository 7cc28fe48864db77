import Dispatch
import Foundation
import SwitchboardAuth
import SwitchboardCore
import SwitchboardStore
import SwitchboardTesting

/// User tokens through ``JWTTokenService/verify(_:)`` with a fixed secret and clock.
///
/// Input forms:
/// - one line: the token string as a client would send it;
/// - `HEADER\nPAYLOAD` (JSON text each): base64url-encoded and signed here with the service's
///   secret, so the claim checks behind the signature are reached;
/// - `HEADER\nPAYLOAD\nSIGNATURE`: the same with the given signature bytes (base64url-encoded).
///
/// A finding: a token accepted whose signature is not HMAC-SHA256 over its first two parts
/// with the secret (computed independently here) or whose header does not say `alg` HS256, or
/// an accepted token that breaks the documented checks (user id 1–256 bytes, not expired, not
/// issued in the future).
///
/// An accepted token whose user id the call gateway takes then goes where the daemon puts it:
/// a client connection record (`tokenExpiresAt` is the token's `exp`) saved to and read back
/// from a real ``SQLiteStore``, as after a restart. A trap there is a finding like any other.
enum TokenEntry {
    static let secret = "fuzz-secret-0123456789abcdef-0123456789"
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let leeway: TimeInterval = 5

    static let service: JWTTokenService = blockingWait {
        await JWTTokenService(configuration: AuthConfiguration(apiKey: "switchboard", apiSecret: secret, leeway: .seconds(5)), now: { now })!
    }

    static func run(_ bytes: [UInt8]) -> FuzzFinding? {
        let token = self.token(from: bytes)
        let service = self.service
        let result = blockingWait { () async -> Result<UserToken, SwitchboardError> in
            do throws(SwitchboardError) {
                return .success(try await service.verify(token))
            } catch {
                return .failure(error)
            }
        }
        FuzzTrace.print("\(token)\n  -> \(result)")
        switch result {
        case .failure(let error):
            guard error.code == .tokenInvalid || error.code == .tokenExpired else {
                return FuzzFinding("verify failed with \(error.code), not token_invalid or token_expired: \(error.message)")
            }
            return nil
        case .success(let claims):
            return check(claims, token: token)
        }
    }

    static func check(_ claims: UserToken, token: String) -> FuzzFinding? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let signature = base64URLDecode(String(parts[2])),
            signature == TestHMAC.sha256(key: Array(secret.utf8), message: Array((parts[0] + "." + parts[1]).utf8))
        else {
            return FuzzFinding("accepted a token not signed HS256 with the secret: \(token.prefix(300))")
        }
        guard let header = base64URLDecode(String(parts[0])),
            let object = try? JSONSerialization.jsonObject(with: Data(header)) as? [String: Any],
            object["alg"] as? String == "HS256"
        else {
            return FuzzFinding("accepted a token whose header does not say alg HS256: \(token.prefix(300))")
        }
        guard !claims.userID.isEmpty, claims.userID.utf8.count <= 256 else {
            return FuzzFinding("accepted user id of \(claims.userID.utf8.count) bytes")
        }
        guard claims.expiresAt.addingTimeInterval(leeway) > now else {
            return FuzzFinding("accepted an expired token (exp \(claims.expiresAt.timeIntervalSince1970))")
        }
        guard claims.issuedAt.addingTimeInterval(-leeway) <= now else {
            return FuzzFinding("accepted a token issued in the future (iat \(claims.issuedAt.timeIntervalSince1970))")
        }
        return storeRoundTrip(claims)
    }

    /// What the call gateway does with an accepted token (``CallGateway`` authenticates a socket
    /// and saves its client connection), then what a restart does (``SQLiteStore/loadLiveState()``).
    static func storeRoundTrip(_ claims: UserToken) -> FuzzFinding? {
        guard let user = UserID(claims.userID), claims.expiresAt > now, let store = store else { return nil }
        let id = ClientConnectionID("fuzz-connection")
        let record = ConnectionRecord(id: id, userID: user, resumeToken: "resume", connectedAt: now, tokenExpiresAt: claims.expiresAt)
        do {
            try store.apply([.saveConnection(record)])
            let loaded = try store.loadLiveState().connections.first { $0.id == id }
            try store.apply([.deleteConnection(id)])
            guard loaded?.userID == user else { return FuzzFinding("the saved connection of \(user) did not load back: \(String(describing: loaded))") }
        } catch {
            // A refusal is a clean outcome; the daemon answers `unavailable`.
        }
        return nil
    }

    /// One SQLite store per process, in a temporary directory removed at exit. A process that
    /// crashed leaves its directory behind; the next one removes those of dead processes.
    static let store: SQLiteStore? = {
        let temporary = FileManager.default.temporaryDirectory
        for name in (try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? [] where name.hasPrefix("switchboard-fuzz-token-") {
            if let pid = Int32(name.dropFirst("switchboard-fuzz-token-".count)), kill(pid, 0) != 0, errno == ESRCH {
                try? FileManager.default.removeItem(at: temporary.appendingPathComponent(name))
            }
        }
        let directory = temporary.appendingPathComponent("switchboard-fuzz-token-\(getpid())").path
        try? FileManager.default.removeItem(atPath: directory)
        guard (try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)) != nil else { return nil }
        storeDirectory.value = directory
        atexit { if let directory = storeDirectory.value { try? FileManager.default.removeItem(atPath: directory) } }
        return try? SQLiteStore(configuration: StoreConfiguration(directory: directory, synchronous: .normal))
    }()

    /// The token an input stands for (see the type's documentation).
    static func token(from bytes: [UInt8]) -> String {
        let lines = bytes.split(separator: UInt8(ascii: "\n"), maxSplits: 2, omittingEmptySubsequences: false)
        guard lines.count >= 2 else { return String(decoding: bytes, as: UTF8.self) }
        let signingInput = base64URL(Array(lines[0])) + "." + base64URL(Array(lines[1]))
        let signature = lines.count == 3 ? Array(lines[2]) : TestHMAC.sha256(key: Array(secret.utf8), message: Array(signingInput.utf8))
        return signingInput + "." + base64URL(signature)
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Lenient: either alphabet, padding optional.
    static func base64URLDecode(_ text: String) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/").replacingOccurrences(of: "=", with: "")
        while standard.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }
}

/// Runs async work to completion from the synchronous fuzz entry point (as the daemon's
/// `Blocking.wait` does): the work runs on the cooperative pool while this thread waits.
func blockingWait<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let box = BlockingBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        box.value = await body()
        done.signal()
    }
    done.wait()
    return box.value!
}

/// Written by the task before it signals; read after the wait returns.
private final class BlockingBox<T>: @unchecked Sendable {
    var value: T?
}

/// The token store's directory, for the exit handler (a C function pointer captures nothing).
private let storeDirectory = BlockingBox<String>()
