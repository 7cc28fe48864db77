import ArgumentParser
import SwitchboardServer
import SwitchboardStore

/// `switchboard migrate`: create or upgrade the SQLite database, then exit.
struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create the database in store.directory or apply pending migrations, then exit.")

    @OptionGroup var options: ConfigOptions

    func run() throws {
        let configuration = try options.load()
        do {
            let store = try SQLiteStore(configuration: configuration.store, migrate: false)
            let applied = try store.migrate()
            let all = try store.appliedMigrations()
            print("database \(configuration.store.databasePath): \(applied.isEmpty ? "up to date" : "applied \(applied.joined(separator: ", "))"); schema \(all.last ?? "empty") (\(all.count) migrations)")
        } catch {
            var standardError = FileHandle.standardError
            print("switchboard: migrate failed: \(error)", to: &standardError)
            throw ExitCode(1)
        }
    }
}

import Foundation
