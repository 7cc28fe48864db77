import ArgumentParser
import Foundation
import SwitchboardAuth
import SwitchboardCore
import SwitchboardServer

/// `switchboard token`: mint a signed user token (for development and operators).
struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Mint a user token signed with auth.api_secret and print it.")

    @OptionGroup var options: ConfigOptions

    @Option(name: .customLong("user"), help: "The user id (the token's user_id and sub).")
    var user: String

    @Option(name: .customLong("ttl"), help: "Lifetime: seconds, or a number with s, m, h or d (default 1h).")
    var ttl: String = "1h"

    @Option(name: .customLong("role"), help: "Optional role claim (admin may end any call).")
    var role: String?

    @Option(name: .customLong("call"), help: "Restrict the token to this call (type:id); repeat for several.")
    var calls: [String] = []

    func run() async throws {
        let configuration = try options.load()
        guard let lifetime = Self.duration(ttl) else { throw ValidationError("--ttl: expected e.g. 3600, 90s, 30m, 1h or 7d (at most 30d)") }
        guard let service = await JWTTokenService(configuration: configuration.auth) else {
            throw ValidationError("no API secret: set auth.api_secret, auth.api_secret_file or SWITCHBOARD_AUTH_API_SECRET")
        }
        do {
            let minted = try await service.issue(TokenRequest(userID: user, ttl: lifetime, callCIDs: calls.isEmpty ? nil : calls, role: role))
            print(minted.token)
        } catch {
            throw ValidationError("\(error)")
        }
    }

    /// Parses `3600`, `90s`, `30m`, `1h`, `7d`.
    static func duration(_ text: String) -> Duration? {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        if let seconds = Int64(text) { return .seconds(seconds) }
        guard let unit = text.last, let factor = units[unit], let value = Int64(text.dropLast()) else { return nil }
        let (seconds, overflow) = value.multipliedReportingOverflow(by: factor)
        return overflow ? nil : .seconds(seconds)
    }
}
