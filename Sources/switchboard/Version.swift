import ArgumentParser
import SwitchboardServer

/// `switchboard version`.
struct Version: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the version.")

    func run() {
        print("switchboard \(SwitchboardVersion.current)")
    }
}
