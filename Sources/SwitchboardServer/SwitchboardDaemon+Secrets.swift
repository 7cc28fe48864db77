import Foundation
import SwitchboardAdmin
import SwitchboardCore
import SwitchboardSFU

/// The secrets a daemon keeps in its state directory (or, on PostgreSQL, in the database, so
/// every daemon of it has the same): the SFU room key and a generated admin token.
extension SwitchboardDaemon {
    /// The key Janus rooms, their secrets and session tokens are derived from: generated into
    /// `<store.directory>/sfu-room.key` (mode 0600) at first start and kept, so rooms and tokens
    /// stay the same across restarts.
    func roomKeys(_ store: any DaemonStore) throws -> SFURoomKeys {
        let file = try stateSecret(store, name: "sfu-room.key", what: "SFU room key", keepCopy: false) {
            var generator = SystemRandomNumberGenerator()
            return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        }
        guard let keys = SFURoomKeys(key: Array(file.token.utf8)) else {
            throw SwitchboardError(.invalidConfiguration, "\(file.path) must hold at least 32 bytes; delete it to have a new one generated")
        }
        return keys
    }

    /// The admin settings with the token resolved: with token auth and none configured, the one
    /// generated into the state directory (its path is logged, never its value).
    func adminConfiguration(_ store: any DaemonStore) throws -> AdminConfiguration {
        var admin = configuration.admin
        guard admin.auth == .token, admin.token == nil else { return admin }
        let file = try stateSecret(store, name: "admin.token", what: "admin token", keepCopy: true) {
            var generator = SystemRandomNumberGenerator()
            return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        }
        admin.token = file.token
        logger.notice(
            file.created ? "generated an admin API token" : "admin API token read from the state directory",
            metadata: ["admin.token_file": "\(file.path)"])
        return admin
    }
}
