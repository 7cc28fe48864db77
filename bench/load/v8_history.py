#!/usr/bin/env python3
"""Writes a call history in the v8 schema (cid-keyed, before `v9_call_number`) for timing the
upgrade: `switchboard migrate --state-dir DIR` then rebuilds it (docs/benchmarks.md).

    bench/load/v8_history.py DIR --calls N

N calls of two members each, two sessions (one joined and left per member) and six events per
call, cids in the load's shape (`default:s<pair>r<round>`), the same column types as the v8
tables. The other tables of v1 to v8 are created empty, and `grdb_migrations` lists v1 to v8 so
that the daemon applies v9 alone.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import time

MIGRATIONS = [
    "v1_audit_log", "v2_audit_log_action_index", "v3_sfus_and_placements", "v4_region", "v5_placement_sources",
    "v6_calls", "v7_sfu_kinds", "v8_batch_log",
]

SCHEMA = """
CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
CREATE TABLE audit_log (id INTEGER PRIMARY KEY AUTOINCREMENT, at DATETIME NOT NULL, actor TEXT NOT NULL,
  action TEXT NOT NULL, target TEXT NOT NULL DEFAULT '', detail TEXT NOT NULL DEFAULT '');
CREATE INDEX audit_log_on_action_at ON audit_log(action, at);
CREATE TABLE sfu (id TEXT PRIMARY KEY NOT NULL, url TEXT NOT NULL, region TEXT, latitude DOUBLE NOT NULL,
  longitude DOUBLE NOT NULL, capacity INTEGER NOT NULL, weight DOUBLE NOT NULL DEFAULT 1, state TEXT NOT NULL, secret TEXT,
  reported_load INTEGER NOT NULL DEFAULT 0, last_heartbeat_at DATETIME, kind TEXT NOT NULL DEFAULT 'heartbeat',
  admin_url TEXT, admin_secret_source TEXT);
CREATE TABLE call_placement (call_id TEXT PRIMARY KEY NOT NULL, sfu_id TEXT NOT NULL, locations TEXT NOT NULL,
  assigned_at DATETIME NOT NULL, reason TEXT NOT NULL, sources TEXT NOT NULL DEFAULT '', room INTEGER);
CREATE INDEX call_placement_on_sfu_id ON call_placement(sfu_id);
CREATE TABLE region (code TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL, latitude DOUBLE NOT NULL,
  longitude DOUBLE NOT NULL);
CREATE TABLE call (cid TEXT PRIMARY KEY NOT NULL, type TEXT NOT NULL, id TEXT NOT NULL, created_by TEXT NOT NULL,
  created_at DATETIME NOT NULL, session INTEGER NOT NULL, ended_at DATETIME, ended_reason TEXT, rung BOOLEAN NOT NULL,
  auto_cancel_at DATETIME, empty_deadline DATETIME, custom TEXT NOT NULL);
CREATE INDEX call_on_ended_at ON call(ended_at);
CREATE INDEX call_on_created_at_cid ON call(created_at, cid);
CREATE INDEX call_on_type ON call(type);
CREATE TABLE call_member (cid TEXT NOT NULL, user_id TEXT NOT NULL, added_at DATETIME NOT NULL, ring_state TEXT NOT NULL,
  ring_reason TEXT, ring_updated_at DATETIME, ring_deadline DATETIME, PRIMARY KEY (cid, user_id));
CREATE INDEX call_member_on_user_id ON call_member(user_id);
CREATE TABLE call_session (session_id TEXT PRIMARY KEY NOT NULL, cid TEXT NOT NULL, call_session INTEGER NOT NULL,
  user_id TEXT NOT NULL, connection_id TEXT NOT NULL, role TEXT NOT NULL, joined_at DATETIME NOT NULL, left_at DATETIME,
  left_reason TEXT, location TEXT, media TEXT NOT NULL);
CREATE INDEX call_session_on_cid_joined_at ON call_session(cid, joined_at);
CREATE INDEX call_session_active ON call_session(joined_at) WHERE left_at IS NULL;
CREATE TABLE call_event (seq INTEGER PRIMARY KEY AUTOINCREMENT, cid TEXT NOT NULL, call_session INTEGER NOT NULL,
  at DATETIME NOT NULL, type TEXT NOT NULL, payload TEXT NOT NULL);
CREATE INDEX call_event_on_cid_seq ON call_event(cid, seq);
CREATE TABLE client_connection (id TEXT PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, resume_token TEXT NOT NULL,
  connected_at DATETIME NOT NULL, token_expires_at DATETIME NOT NULL, detached_at DATETIME);
CREATE TABLE batch_log_state (id INTEGER PRIMARY KEY CHECK (id = 1), folded_through INTEGER NOT NULL);
"""

MEDIA = '{"audio":true,"audio_level":0,"pinned":false,"screenshare":false,"speaking":false,"video":true}'


def stamp(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds)) + f".{int(seconds * 1000) % 1000:03d}"


def write(directory: str, calls: int, pairs: int) -> None:
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "switchboard.sqlite")
    if os.path.exists(path):
        raise SystemExit(f"{path} exists")
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode = WAL")
    db.executescript(SCHEMA)
    db.executemany("INSERT INTO grdb_migrations VALUES (?)", [(m,) for m in MIGRATIONS])
    start = 1_800_000_000.0
    with db:
        for n in range(calls):
            pair, round_ = n % pairs, n // pairs
            cid, at = f"default:s{pair}r{round_}", start + n / 500
            users = [f"u{2 * pair}", f"u{2 * pair + 1}"]
            db.execute(
                "INSERT INTO call VALUES (?, 'default', ?, ?, ?, 1, ?, 'empty', 0, NULL, NULL, '{}')",
                (cid, cid[8:], users[0], stamp(at), stamp(at + 300)))
            for k, user in enumerate(users):
                db.execute("INSERT INTO call_member VALUES (?, ?, ?, 'none', NULL, NULL, NULL)", (cid, user, stamp(at + k)))
                db.execute(
                    "INSERT INTO call_session VALUES (?, ?, 1, ?, ?, 'participant', ?, ?, 'left', NULL, ?)",
                    (f"{n:012x}-{k}", cid, user, f"conn-{user}", stamp(at + k), stamp(at + 2), MEDIA))
            for k in range(6):
                db.execute(
                    "INSERT INTO call_event (cid, call_session, at, type, payload) VALUES (?, 1, ?, 'call.participant_joined', ?)",
                    (cid, stamp(at + k / 10), '{"user_id":"%s"}' % users[k % 2]))
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory")
    parser.add_argument("--calls", type=int, default=300_000)
    parser.add_argument("--pairs", type=int, default=200)
    opts = parser.parse_args()
    began = time.monotonic()
    write(opts.directory, opts.calls, opts.pairs)
    size = os.path.getsize(os.path.join(opts.directory, "switchboard.sqlite"))
    print(f"{opts.calls:,} calls written in {time.monotonic() - began:.1f}s; {size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
