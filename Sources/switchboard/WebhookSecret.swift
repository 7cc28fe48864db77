import ArgumentParser
import SwitchboardCore

/// `switchboard webhook-secret`: a new endpoint signing secret for `webhooks.secrets`.
struct WebhookSecret: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhook-secret", abstract: "Print a new webhook signing secret (whsec_ and 32 random bytes in base64).")

    func run() {
        var generator = SystemRandomNumberGenerator()
        print(WebhookSignature.newSecret(using: &generator))
    }
}
