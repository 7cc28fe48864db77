import Foundation
import SwitchboardKit

@main
@MainActor
struct QuickStart {
    static func main() async {
        // Your backend mints user tokens with the daemon's API secret (here: from the environment).
        let environment = ProcessInfo.processInfo.environment
        let url = URL(string: environment["SWITCHBOARD_URL"] ?? "ws://127.0.0.1:9000/v1/connect")!
        let token = UserToken(rawValue: environment["SWITCHBOARD_TOKEN"] ?? "")

        let client = SwitchboardClient(
            url: url,
            user: UserInfo(id: "alice", name: "Alice"),
            token: token,
            config: ClientConfig(persistingSocketConnection: true, joinCallInstantly: false),
            tokenProvider: {
                // Called when the token is about to expire: ask your backend for a new one.
                token
            })

        do {
            try await client.connect()

            // Meeting mode: join a call by id (created on first use) and read its participants.
            let controller = client.makeCallController(callType: "default", callId: "standup")
            let call = try await controller.joinCall(location: CallLocation(region: "fra"))
            print("joined as", call.ownSessionID ?? "?", "with", call.participants.map(\.userId))
            try await controller.updateParticipant(MediaUpdate(audio: true, video: true))
            try await controller.leave()

            // Ringing mode: a view model drives the outgoing and incoming screens.
            let phone = CallViewModel(client: client)
            await phone.startCall(callType: "ringing", callId: "c-\(UUID().uuidString.prefix(8))", members: ["bob"])
            print("calling state:", phone.callingState)
        } catch {
            print("failed:", error.code, error.message)
        }
        await client.disconnect()
    }
}
