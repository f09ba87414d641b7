// Package localflow runs an Amazon States Language state machine on one
// machine, with executions persisted in SQLite. It is the embedded runtime
// of oncepost's confirm workflow (DESIGN §6): `oncepost run` loads the same
// infra/statemachine/confirm.asl.json that Step Functions Standard runs on
// AWS, and Task states call the confirm function in-process through an
// Invoker.
//
// # Supported subset
//
// Load refuses, with a *DefinitionError naming the state and the field,
// anything outside this subset; nothing is silently ignored.
//
//   - Query language JSONPath only. Top level: Comment, StartAt, States,
//     Version "1.0".
//   - Pass: InputPath, Parameters, Result, ResultPath, OutputPath, Next/End.
//   - Task with Resource arn:aws:states:::lambda:invoke or
//     arn:aws:states:::lambda:invoke.waitForTaskToken; Parameters with
//     FunctionName and Payload only; InputPath, ResultSelector, ResultPath,
//     OutputPath, Retry (ErrorEquals, IntervalSeconds, MaxAttempts,
//     BackoffRate, MaxDelaySeconds), Catch (ErrorEquals, ResultPath, Next),
//     Next/End. No TimeoutSeconds, HeartbeatSeconds, JitterStrategy.
//   - Choice: Choices, Default, InputPath, OutputPath; rules with Variable
//     and one of StringEquals, NumericLessThan, NumericLessThanPath,
//     BooleanEquals, IsPresent, or And / Or / Not.
//   - Wait: exactly one of Seconds, SecondsPath, Timestamp, TimestampPath;
//     InputPath, OutputPath, Next/End.
//   - Succeed: InputPath, OutputPath. Fail: Error or ErrorPath, Cause or
//     CausePath (a path or States.Format).
//   - Paths: `$`, `$$` (context object), `.field`, `['field']`, `[index]`;
//     ResultPath field names only. No wildcards, filters, slices or
//     recursive descent.
//   - Payload templates (Parameters, ResultSelector): fields ending in `.$`
//     take a path, a context path or an intrinsic, in nested objects too.
//     Context paths: $$.Execution.{Id,Name,Input,StartTime},
//     $$.State.{Name,EnteredTime,RetryCount}, and $$.Task.Token in a
//     .waitForTaskToken task's Parameters (which must pass it).
//   - Intrinsics: States.Format and States.MathAdd (integers), arguments
//     being literals, paths or nested intrinsic calls.
//
// # Semantics
//
// As Step Functions: a state's effective input is InputPath applied to its
// raw input, then Parameters; a Task's result goes through ResultSelector,
// then ResultPath (merged into the raw input; null keeps the raw input),
// then OutputPath. A Pass's result is Result, else its effective input. A
// lambda:invoke result is {"ExecutedVersion","Payload","StatusCode"}; a
// .waitForTaskToken task's result is the output given to SendTaskSuccess.
//
// A Task error is matched against the Retry elements in order: the first
// whose ErrorEquals names it decides (retry after IntervalSeconds ×
// BackoffRate^(n-1), capped by MaxDelaySeconds, unless MaxAttempts are
// spent); then the Catch elements in order, whose match moves to Next with
// {"Error","Cause"} at its ResultPath (default `$`) of the raw input;
// otherwise the execution fails with the error. States.ALL matches every
// error but States.Runtime. Function errors are named by ErrorName. Every
// data error (a path that selects nothing, a bad intrinsic argument or
// Wait value, a ResultPath into a non-object) is States.Runtime, which is
// never retried or caught; a Choice without match or Default raises
// States.NoChoiceMatched. Both fail the execution.
//
// # Persistence and crashes
//
// Each execution is one row of localflow_executions (current state, its
// raw input, phase, retry counters, due time, task token, status, version)
// plus its entered states in localflow_history; the definition it started
// with is kept in localflow_machines, so a changed definition applies to
// new executions only. Every step is one BEGIN IMMEDIATE transaction that
// reads the row, computes and writes it back under a version check, so a
// process killed at any moment resumes from the last recorded transition,
// and two engines sharing a file never both record a step.
//
// A Task is claimed (written with the engine's Owner and a 15-minute
// lease) before it is invoked outside any transaction, and its outcome is
// recorded only if the claim still holds. A crash, or a cancelled context,
// between the invocation and the record leaves the claim: the same Owner
// takes it over at New, and so does an engine whose Options.OwnerGone
// reports the claim's owner gone (each process having its own Owner); any
// other engine when the lease ends; and the task runs again. Tasks are
// therefore at-least-once, like Step Functions'; the confirm steps are
// idempotent. A .waitForTaskToken task that runs again after a crash keeps
// its token; a task retried by Retry gets a new one.
//
// Stopped executions stay, with their history, until Prune deletes them
// (Step Functions keeps closed executions 90 days); Prune also deletes the
// definitions no execution uses any more. The queries of New, Run and Prune
// go through indexes, so their cost does not grow with the number of
// stopped executions the file holds.
//
// # Differences from Step Functions
//
// A stopped execution, and so its name, is kept until Prune deletes it,
// not for 90 days; then the name can be started again, as in Step
// Functions once the 90 days are over. Start compares inputs as JSON, not
// as text; the context object's Execution.Id is
// "localflow:execution:<name>"; only state names are kept as history; and
// there are no timeouts, heartbeats, Map, Parallel or JSONata.
package localflow
