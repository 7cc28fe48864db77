import ArgumentParser
import Foundation
import Logging
import SwitchboardKit

/// `switchboard-phone`: ring, answer and meet from a terminal, on SwitchboardKit.
@main
struct Phone: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "switchboard-phone",
        abstract: "Ring, answer and meet through a Switchboard daemon (signalling only, no media).",
        subcommands: [CallCommand.self, AnswerCommand.self, MeetCommand.self])
}

/// Where and who: shared by every subcommand.
struct Connection: ParsableArguments {
    @Option(help: "The daemon: ws://HOST:PORT/v1/connect (or http://HOST:PORT).")
    var url: String = "ws://127.0.0.1:9000/v1/connect"
    @Option(help: "A user token (switchboard token --user ID, or POST /dev/token with serve --dev).")
    var token: String?
    @Option(help: "A file holding the token (first line), read again whenever a new token is needed.")
    var tokenFile: String?
    @Flag(help: "Log every frame's type and seq to standard error (never tokens).")
    var verbose = false

    func client(persisting: Bool = true) throws -> SwitchboardClient {
        guard let url = URL(string: url) else { throw ValidationError("--url: not a URL: \(self.url)") }
        let file = tokenFile
        let first = try currentToken()
        guard let user = UserTokenClaims.user(of: first) else { throw ValidationError("the token names no user (user_id or sub)") }
        let fixed = token
        var logger = Logger(label: "switchboard-phone") { label in StreamLogHandler.standardError(label: label) }
        logger.logLevel = verbose ? .trace : .warning
        return SwitchboardClient(
            url: url, user: UserInfo(id: user), token: UserToken(rawValue: first),
            config: ClientConfig(persistingSocketConnection: persisting),
            tokenProvider: {
                if let file { return UserToken(rawValue: try Self.read(file)) }
                guard let fixed else { throw ValidationError("no token") }
                return UserToken(rawValue: fixed)
            }, logger: logger)
    }

    func currentToken() throws -> String {
        if let token, tokenFile == nil { return token }
        if let tokenFile, token == nil { return try Self.read(tokenFile) }
        throw ValidationError("give --token or --token-file (one of them)")
    }

    static func read(_ path: String) throws -> String {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        guard let line = text.split(whereSeparator: \.isNewline).first, !line.isEmpty else { throw ValidationError("\(path) is empty") }
        return String(line).trimmingCharacters(in: .whitespaces)
    }
}

/// The user a token names, read from its payload without checking it (the daemon checks).
enum UserTokenClaims {
    static func user(of token: String) -> String? {
        let parts = token.split(separator: ".")
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64),
            let claims = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return claims["user_id"] as? String ?? claims["sub"] as? String
    }
}

/// Prints one line, written at once (the tests read it from a pipe).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Exits with a message on a request error.
func fail(_ error: any Error) -> ExitCode {
    say("error: \(error)")
    return ExitCode(1)
}
