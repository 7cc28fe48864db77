import ArgumentParser
import SwitchboardPostgres
import SwitchboardServer
import SwitchboardStore
import SwitchboardTransport

/// `switchboard migrate`: create or upgrade the database (SQLite or PostgreSQL), then exit.
struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create the database (store.directory, or store.postgres_url) or apply pending migrations, then exit.",
        discussion: """
            SQLite: also folds what a stopped or crashed daemon left in the batch log into the tables; refused while a daemon runs on \
            the same state directory. PostgreSQL: safe beside running daemons (one advisory lock serializes migrations).
            """)

    @OptionGroup var options: ConfigOptions

    func run() throws {
        let configuration = try options.load()
        if let postgres = configuration.postgres {
            do {
                let store = try PostgresStore(configuration: postgres)
                defer { store.close() }
                let applied = store.migrationsApplied
                let all = try store.appliedMigrations()
                print(
                    "database \(configuration.storeDescription): "
                        + "\(applied.isEmpty ? "up to date" : "applied \(applied.joined(separator: ", "))"); schema \(all.last ?? "empty") (\(all.count) migrations)")
            } catch {
                var standardError = FileHandle.standardError
                print("switchboard: migrate failed: \(error)", to: &standardError)
                throw ExitCode(1)
            }
            return
        }
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
