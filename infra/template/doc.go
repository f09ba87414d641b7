// Package template holds the contract test of template.yaml, the SAM
// template that deploys oncepost on AWS (DESIGN §6). It has no code of its
// own outside the test.
//
// The test parses the template with goformation and checks it against
// what it must agree with, each check shown to catch a broken template:
//
//   - the CloudFormation and SAM resource specification of
//     @aws-cdk/aws-service-spec (property names, types, required ones,
//     allowed values), with a short allow-list of SAM properties newer
//     than it;
//   - the code: every environment variable the functions read is set,
//     every metric an alarm or the dashboard watches in the custom
//     namespace is emitted, the tables are dynamostore.Tables, the
//     queues have what sqsqueue.Check wants, DynamoDB and KMS actions
//     are calls the store makes;
//   - itself: every Ref, Fn::GetAtt and Fn::Sub resolves, the outputs the
//     CLI reads exist, the state machine's substitutions match its file;
//   - least privilege: no wildcard actions on DynamoDB, SQS, Step
//     Functions or Scheduler, resources scoped to the stack's own, the
//     credentials table and key only for the functions that act with
//     tokens; no one deletes ledger rows and no function credentials, the
//     trigger writes no post, only the publisher takes jobs from the
//     publish queue, schedule writes are scoped to the slot schedules
//     (never the sweeper's), buckets deny requests without TLS, the API
//     function writes the workspace table only in the idempotency
//     records' partitions; and the grants the code's calls need are
//     there;
//   - the HTTP API: IAM on every route, payload format 2.0, the function
//     behind it timed out under API Gateway's 30 s and
//     dynamostore.CreateStaleAfter, alarms on its throttles, its duration
//     and the stage's 5xx, its URL an output; every functions/<name> is a
//     function of the template;
//   - the build: `make build-<LogicalId> ARTIFACTS_DIR=…`, what `sam build`
//     runs, makes a linux/arm64 bootstrap of the function's package
//     (skipped under -short).
package template
