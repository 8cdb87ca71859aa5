-- The ledger's tables. One row per conversation (its head: the last seq and hash the
-- append transaction moves forward), one per entry (the stored JSON, byte for byte as
-- hashed), the task index and the content-addressed artifacts.
CREATE TABLE conversations (
    key           text PRIMARY KEY CHECK (key ~ '^v1/[0-9a-f]{64}$'), -- contextid.Key(owner, contextId)
    context_id    text   NOT NULL,
    owner         text   NOT NULL,
    created_at    bigint NOT NULL, -- Unix nanoseconds
    last_activity bigint NOT NULL, -- Unix nanoseconds
    last_seq      bigint NOT NULL CHECK (last_seq >= 0),
    last_hash     text   NOT NULL,
    epoch         bigint NOT NULL CHECK (epoch >= 0),
    entries       bigint NOT NULL,
    turns         bigint NOT NULL,
    tasks         bigint NOT NULL,
    last_task_id  text   NOT NULL
);
CREATE INDEX conversations_by_context_id ON conversations (context_id, owner);
CREATE INDEX conversations_by_activity ON conversations (last_activity DESC, key);

CREATE TABLE entries (
    conv_key text   NOT NULL REFERENCES conversations (key),
    seq      bigint NOT NULL CHECK (seq > 0),
    task_id  text,
    body     bytea  NOT NULL, -- the entry's stored JSON (hash included), exactly as hashed
    PRIMARY KEY (conv_key, seq)
);
CREATE INDEX entries_by_task ON entries (task_id, seq) WHERE task_id IS NOT NULL;

CREATE TABLE tasks (
    task_id      text PRIMARY KEY,
    conv_key     text NOT NULL REFERENCES conversations (key),
    prev_task_id text NOT NULL -- the task the conversation started before this one ('' if none)
);

CREATE TABLE artifacts (
    digest text  PRIMARY KEY CHECK (digest ~ '^[0-9a-f]{64}$'), -- sha256 of data, lowercase hex
    data   bytea NOT NULL
);
