// Package pipeline holds no code: its tests run the AWS runtime's publish
// path end to end on one machine — the trigger and publisher functions
// built as `bootstrap` and run under the Lambda Runtime Interface
// Emulator, the SQS event source mapping played by sqsesm, dynalite and
// fauxqs behind counting proxies, the sandbox platform — and count the AWS
// API calls each published post costs.
package pipeline
