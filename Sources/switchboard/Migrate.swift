import ArgumentParser
import SwitchboardServer
import SwitchboardStore
import SwitchboardTransport

/// `switchboard migrate`: create or upgrade the SQLite database, then exit.
struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create the database in store.directory or apply pending migrations, then exit.",
        discussion: "Also folds what a stopped or crashed daemon left in the batch log into the tables. Refused while a daemon runs on the same state directory.")

    @OptionGroup var options: ConfigOptions

    func run() throws {
        let configuration = try options.load()
        do {
            // Opening the store folds the batch log (ADR 0010): never beside a daemon appending to
            // it, which holds this lock while it runs.
            let lock = try ProcessLock(directory: configuration.store.directory)
            defer { withExtendedLifetime(lock) {} }
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
