// Command api is oncepost's HTTP API (/v1) on AWS: an API Gateway HTTP
// API with IAM authorization invokes it with payload format 2.0 events
// (shared/apigw), and it answers them with the API's handler over the
// stack's store, queue and schedules (handler.go). Who may call which
// route is IAM's to decide: a caller needs execute-api:Invoke on the
// route (docs/api-aws.md).
package main

import "oncepost/shared/awsruntime"

func main() { awsruntime.Start("api", build) }
