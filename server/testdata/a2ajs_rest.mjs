// The stock a2a-js client (@a2a-js/sdk) over its HTTP+JSON (REST) transport against the
// gateway: a multi-turn conversation with streaming and resubscribe. Run by
// TestA2AJSRestInterop (server/a2ajs_test.go) as: node a2ajs_rest.mjs BASE_URL, from a
// directory where @a2a-js/sdk is installed. It prints one JSON line per step; before the
// streamed turn's reply it prints {"step":"subscribed"} and waits for a line on stdin
// (the test then lets the agent reply), so nothing depends on timing.
import { ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import { Role, taskStateToJSON } from '@a2a-js/sdk';
import { createInterface } from 'node:readline';
import { randomUUID } from 'node:crypto';

const base = process.argv[2];
const out = (o) => console.log(JSON.stringify(o));
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { preferredTransports: ['HTTP+JSON'] }));
const client = await factory.createFromUrl(base);
const contextId = 'ctx-a2ajs-' + randomUUID();
const message = (text) => ({ message: { messageId: randomUUID(), contextId, role: Role.ROLE_USER, parts: [{ content: { $case: 'text', value: text } }] } });
const text = (parts) => (parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
const summary = (ev) => {
  const p = ev.payload;
  switch (p?.$case) {
    case 'task': return { kind: 'task', id: p.value.id, state: taskStateToJSON(p.value.status.state) };
    case 'statusUpdate': return { kind: 'status', state: taskStateToJSON(p.value.status.state) };
    case 'artifactUpdate': return { kind: 'artifact', text: text(p.value.artifact.parts), append: p.value.append };
    default: return { kind: p?.$case ?? 'none' };
  }
};

out({ step: 'card', transport: client.transport?.protocolName ?? client.transport?.constructor?.name });

// Turn 1: a blocking send.
const t1 = await client.sendMessage(message('first turn'));
out({ step: 'turn1', id: t1.id, contextId: t1.contextId, state: taskStateToJSON(t1.status.state), reply: text(t1.artifacts?.[0]?.parts) });

// Turn 2: a streamed send, joined by a resubscribe while it runs.
const stream = client.sendMessageStream(message('slow second turn'));
const first = await stream.next();
const task2 = summary(first.value);
const resub = client.resubscribeTask({ id: task2.id });
const snap = await resub.next();
out({ step: 'subscribed', stream: task2, resubscribe: summary(snap.value) });
await lines.next(); // the test lets the turn go on
const collect = async (it) => { const evs = []; for await (const ev of it) evs.push(summary(ev)); return evs; };
const [streamed, resubscribed] = await Promise.all([collect(stream), collect(resub)]);
out({ step: 'turn2', id: task2.id, stream: streamed, resubscribe: resubscribed });

// Turn 3: the conversation goes on; then the tasks of the context, and turn 1 again.
const t3 = await client.sendMessage(message('third turn'));
const list = await client.listTasks({ contextId });
const again = await client.getTask({ id: t1.id });
out({ step: 'turn3', id: t3.id, state: taskStateToJSON(t3.status.state), reply: text(t3.artifacts?.[0]?.parts),
  listed: list.tasks.map((t) => t.id), turn1: taskStateToJSON(again.status.state) });

// An error: an unknown task.
try {
  await client.getTask({ id: 'no-such-task' });
  out({ step: 'error', error: null });
} catch (e) {
  out({ step: 'error', name: e?.constructor?.name, message: String(e?.message ?? e) });
}
process.exit(0);
