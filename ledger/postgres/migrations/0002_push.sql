-- Push notifications (issue #20): the indexes over the PUSH_CONFIG and PUSH_OUTBOX
-- entries, written in the transaction that stores those entries (ledger.PushOps).
CREATE TABLE push_configs (
    owner     text   NOT NULL,
    task_id   text   NOT NULL,
    config_id text   NOT NULL,
    conv_key  text   NOT NULL,
    seq       bigint NOT NULL, -- the live PUSH_CONFIG entry
    PRIMARY KEY (owner, task_id, config_id)
);

CREATE TABLE push_pending (
    conv_key text    NOT NULL,
    seq      bigint  NOT NULL, -- the PUSH_OUTBOX entry
    task_id  text    NOT NULL,
    created  bigint  NOT NULL, -- Unix nanoseconds
    attempts integer NOT NULL DEFAULT 0,
    next_at  bigint  NOT NULL DEFAULT 0, -- Unix nanoseconds, 0: now
    PRIMARY KEY (conv_key, seq)
);
