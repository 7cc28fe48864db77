import GRDB

extension StoreMigrations {
    /// Migration `v9_call_number` (ADR 0010, "keys in creation order"): every cid gets a number
    /// the first time a row names it (`call_key`), and a call and its members, sessions and
    /// events are keyed on that number instead of on the cid.
    ///
    /// A cid is the client's text (`default:s12r345`, a UUID), so an index that leads with it
    /// puts each new call on a different page: at 500 new calls a second every fold dirtied one
    /// page per call in each of four indexes, and the bytes written per join grew with the
    /// history. Keyed on numbers given in creation order, new rows land at the right edge of each
    /// index, where the previous fold's pages already are; only `call_key_on_cid` still takes a
    /// page per new call. The number belongs to the cid, not to the call row, so a member, session
    /// or event may still be written before its call (the store contract's "any order").
    ///
    /// The child tables keep their `cid` column, so each stays readable on its own.
    static func keyCallRowsOnCallNumber(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE call_key (no INTEGER PRIMARY KEY, cid TEXT NOT NULL);
            CREATE UNIQUE INDEX call_key_on_cid ON call_key(cid);
            INSERT INTO call_key (no, cid) SELECT rowid, cid FROM call ORDER BY rowid;
            INSERT INTO call_key (cid) SELECT DISTINCT cid FROM call_member WHERE true ON CONFLICT DO NOTHING;
            INSERT INTO call_key (cid) SELECT DISTINCT cid FROM call_session WHERE true ON CONFLICT DO NOTHING;
            INSERT INTO call_key (cid) SELECT DISTINCT cid FROM call_event WHERE true ON CONFLICT DO NOTHING;

            CREATE TABLE call_v9 (
              no INTEGER PRIMARY KEY, cid TEXT NOT NULL, type TEXT NOT NULL, id TEXT NOT NULL, created_by TEXT NOT NULL,
              created_at DATETIME NOT NULL, session INTEGER NOT NULL, ended_at DATETIME, ended_reason TEXT,
              rung BOOLEAN NOT NULL, auto_cancel_at DATETIME, empty_deadline DATETIME, custom TEXT NOT NULL);
            INSERT INTO call_v9 (no, cid, type, id, created_by, created_at, session, ended_at, ended_reason, rung,
              auto_cancel_at, empty_deadline, custom)
              SELECT rowid, cid, type, id, created_by, created_at, session, ended_at, ended_reason, rung,
              auto_cancel_at, empty_deadline, custom FROM call ORDER BY rowid;
            DROP TABLE call;
            ALTER TABLE call_v9 RENAME TO call;
            CREATE INDEX call_on_ended_at ON call(ended_at);
            CREATE INDEX call_on_created_at_cid ON call(created_at, cid);
            CREATE INDEX call_on_type ON call(type);

            CREATE TABLE call_member_v9 (
              call_no INTEGER NOT NULL, cid TEXT NOT NULL, user_id TEXT NOT NULL, added_at DATETIME NOT NULL,
              ring_state TEXT NOT NULL, ring_reason TEXT, ring_updated_at DATETIME, ring_deadline DATETIME,
              PRIMARY KEY (call_no, user_id)) WITHOUT ROWID;
            INSERT INTO call_member_v9 (call_no, cid, user_id, added_at, ring_state, ring_reason, ring_updated_at, ring_deadline)
              SELECT k.no, m.cid, m.user_id, m.added_at, m.ring_state, m.ring_reason, m.ring_updated_at, m.ring_deadline
              FROM call_member m JOIN call_key k ON k.cid = m.cid;
            DROP TABLE call_member;
            ALTER TABLE call_member_v9 RENAME TO call_member;
            CREATE INDEX call_member_on_user_id ON call_member(user_id);

            ALTER TABLE call_session ADD COLUMN call_no INTEGER NOT NULL DEFAULT 0;
            UPDATE call_session SET call_no = (SELECT no FROM call_key WHERE call_key.cid = call_session.cid);
            DROP INDEX call_session_on_cid_joined_at;
            CREATE INDEX call_session_on_call_no_joined_at ON call_session(call_no, joined_at);

            ALTER TABLE call_event ADD COLUMN call_no INTEGER NOT NULL DEFAULT 0;
            UPDATE call_event SET call_no = (SELECT no FROM call_key WHERE call_key.cid = call_event.cid);
            DROP INDEX call_event_on_cid_seq;
            CREATE INDEX call_event_on_call_no_seq ON call_event(call_no, seq);
            """)
    }
}
