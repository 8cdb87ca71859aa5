-- The running-task index (issue #16): the tasks that have entries and whose last STATUS
-- entry, if any, does not settle them (ledger.TaskSettled), written in the transaction
-- that stores the entries that start or settle a task (ledger.RunningChanges), so that a
-- restart reads only the tasks that were running.
CREATE TABLE running_tasks (
    task_id  text PRIMARY KEY,
    conv_key text NOT NULL REFERENCES conversations (key)
);

-- A database written before this migration: every task whose last STATUS entry leaves it
-- running (or that has none). The states that settle a task are ledger.TaskSettled's. The
-- kind and state are read from the entry's canonical JSON as text, not parsed as json or
-- jsonb (PostgreSQL refuses the \u0000 escape a part's text may hold): the entry's own
-- fields come first, in Entry's field order, and every string before "parts" and
-- "metadata" is escaped, so the first "kind" and "state" before those are the entry's.
CREATE FUNCTION pg_temp.entry_head(body bytea) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT split_part(split_part(convert_from(body, 'UTF8'), ',"parts":', 1), ',"metadata":', 1)
$$;

INSERT INTO running_tasks (task_id, conv_key)
SELECT t.task_id, t.conv_key FROM tasks t
LEFT JOIN LATERAL (
    SELECT coalesce(substring(pg_temp.entry_head(e.body) FROM '"state":"([^"\\]*)"'), '') AS state FROM entries e
    WHERE e.task_id = t.task_id AND substring(pg_temp.entry_head(e.body) FROM '"kind":"([A-Z_]+)"') = 'STATUS'
    ORDER BY e.seq DESC LIMIT 1
) s ON true
WHERE EXISTS (SELECT 1 FROM entries e WHERE e.task_id = t.task_id)
  AND (s.state IS NULL OR s.state NOT IN (
    'completed', 'canceled', 'failed', 'rejected', 'input-required', 'auth-required',
    'TASK_STATE_COMPLETED', 'TASK_STATE_CANCELED', 'TASK_STATE_FAILED', 'TASK_STATE_REJECTED',
    'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED'));
