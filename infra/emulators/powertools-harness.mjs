// powertools-harness.mjs: the baseline of `make bench-aws`. It runs a
// handler wrapped with makeIdempotent from Powertools for AWS Lambda
// (TypeScript) idempotency, with its DynamoDBPersistenceLayer on a given
// DynamoDB endpoint (dynalite, through the bench's counting proxy), the way
// a Node.js Lambda function would use it. The Go side
// (shared/dynamostore/powertools_*_test.go) starts it with the Node 22
// binary of node_modules/.bin and drives it with one JSON command per line
// on stdin; it answers one JSON line per command on stdout:
//
//   {"op":"bench","keys":N,"concurrency":C,"run":"r1"}
//     N invocations with new keys ({"key":"r1-<i>"}), C at a time; the side
//     effect is a counter in this process. Answers
//     {"keys","errors","first_error","elapsed_ms","cpu_us","side_effects"}:
//     cpu_us is this process's user + system CPU time over the run
//     (process.cpuUsage), elapsed_ms its wall-clock time.
//   {"op":"invoke","event":{...},"remaining_ms":R,"platform":{"url","token","text","timeout_ms"}}
//     One invocation of event with a Lambda context whose remaining time
//     starts at R ms (Powertools writes in_progress_expiration = now + R).
//     The side effect is a status create on the Mastodon-compatible sandbox
//     at url (POST /api/v1/statuses, given up after timeout_ms: a thrown
//     timeout). Answers {"result":…} or {"error":{"name","message"}}.
//   {"op":"record","event":{...}}
//     The idempotency record of event, read as Powertools reads it (a
//     consistent GetItem): {"record":{"status","expiration",
//     "in_progress_expiration"}} (epoch seconds, and milliseconds), or
//     {"error":…} (IdempotencyItemNotFoundError when there is none).
//
// It prints {"ready":true,"pid":…} once loaded, and exits when stdin
// closes (the Go test that holds the other end is gone), after the command
// in progress. Arguments: --endpoint URL --table NAME. Credentials are
// dummies; the region is us-east-1. Nothing here is deployed.

import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';

const { values: args } = parseArgs({
  options: { endpoint: { type: 'string' }, table: { type: 'string' } },
});
if (!args.endpoint || !args.table) {
  console.error('usage: powertools-harness.mjs --endpoint URL --table NAME');
  process.exit(2);
}

// One client, persistence layer and wrapped handler per process, built at
// module load as a Lambda function builds them outside its handler. The
// SDK's Node HTTP handler keeps connections alive (50 sockets) by default.
const client = new DynamoDBClient({
  endpoint: args.endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'AKIDEMULATOR', secretAccessKey: 'emulator-secret' },
  maxAttempts: 3,
});
const persistenceStore = new DynamoDBPersistenceLayer({ tableName: args.table, awsSdkV3Client: client });
const config = new IdempotencyConfig({});
// makeIdempotent configures the layer on its first call; the record command
// may come first.
persistenceStore.configure({ config });

let sideEffects = 0;
// platform is the sandbox the current invoke command's side effect goes
// to; commands run one at a time, so one variable does.
let platform = null;

async function handler() {
  if (platform === null) {
    sideEffects++;
    return { side_effect: sideEffects };
  }
  const res = await fetch(new URL('/api/v1/statuses', platform.url), {
    method: 'POST',
    headers: { authorization: `Bearer ${platform.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ status: platform.text }),
    signal: AbortSignal.timeout(platform.timeout_ms),
  });
  const body = await res.json();
  if (!res.ok) {
    throw new Error(`status create answered ${res.status}: ${JSON.stringify(body)}`);
  }
  return { remote_id: body.id };
}

const idempotentHandler = makeIdempotent(handler, { persistenceStore, config });

// lambdaContext is the part of a Lambda context Powertools reads: the
// remaining time, counting down from remainingMs.
function lambdaContext(remainingMs) {
  const deadline = Date.now() + remainingMs;
  return {
    functionName: process.env.AWS_LAMBDA_FUNCTION_NAME ?? 'powertools-harness',
    awsRequestId: `req-${process.pid}-${Math.random().toString(36).slice(2)}`,
    getRemainingTimeInMillis: () => Math.max(deadline - Date.now(), 0),
  };
}

async function bench({ keys, concurrency, run }) {
  platform = null;
  let next = 0;
  let errors = 0;
  let firstError = '';
  const before = sideEffects;
  const worker = async () => {
    while (next < keys) {
      const i = next++;
      try {
        await idempotentHandler({ key: `${run}-${i}` }, lambdaContext(60_000));
      } catch (err) {
        errors++;
        firstError ||= `${err.name}: ${err.message}${err.cause ? ` (cause: ${err.cause})` : ''}`;
      }
    }
  };
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: Math.max(concurrency, 1) }, worker));
  const elapsedNs = process.hrtime.bigint() - t0;
  const cpu = process.cpuUsage(cpu0);
  return {
    keys,
    errors,
    first_error: firstError,
    elapsed_ms: Number(elapsedNs) / 1e6,
    cpu_us: cpu.user + cpu.system,
    side_effects: sideEffects - before,
  };
}

async function invoke({ event, remaining_ms: remainingMs, platform: p }) {
  platform = p;
  try {
    return { result: await idempotentHandler(event, lambdaContext(remainingMs)) };
  } catch (err) {
    return { error: { name: err.name, message: `${err.message}${err.cause ? ` (cause: ${err.cause})` : ''}` } };
  } finally {
    platform = null;
  }
}

async function record({ event }) {
  try {
    const r = await persistenceStore.getRecord(event);
    return {
      record: { status: r.getStatus(), expiration: r.expiryTimestamp, in_progress_expiration: r.inProgressExpiryTimestamp },
    };
  } catch (err) {
    return { error: { name: err.name, message: err.message } };
  }
}

const commands = { bench, invoke, record };

process.stdin.on('error', () => process.exit(0));
console.log(JSON.stringify({ ready: true, pid: process.pid }));

for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  let answer;
  try {
    const cmd = JSON.parse(line);
    const run = commands[cmd.op];
    answer = run ? await run(cmd) : { error: { name: 'BadCommand', message: `unknown op ${JSON.stringify(cmd.op)}` } };
  } catch (err) {
    answer = { error: { name: 'BadCommand', message: String(err) } };
  }
  console.log(JSON.stringify(answer));
}
process.exit(0);
