package main

import (
	"cmp"
	"context"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"oncepost/shared/apigw"
	"oncepost/shared/apitoken"
	"oncepost/shared/awsruntime"
	"oncepost/shared/httpapi"
	"oncepost/shared/publishing"
)

// callTimeout bounds one platform call of the use cases (on AWS only an
// approved delete makes one, and the api function holds no platform
// token: see docs/api-aws.md).
const callTimeout = 10 * time.Second

// build is the function's handler: the HTTP API (shared/httpapi over
// publishing.Desk, as `oncepost serve` serves it) behind the API Gateway
// adapter, each request's caller the IAM identity API Gateway verified.
// Its webhooks are the stack's subscriptions and the webhook queue's dead
// deliveries (awswebhooks: only dead ones are listed on AWS).
func build(rt *awsruntime.Runtime) (any, error) {
	desk, err := rt.Desk(callTimeout)
	if err != nil {
		return nil, err
	}
	queue, err := rt.Queue()
	if err != nil {
		return nil, err
	}
	media, err := rt.Media()
	if err != nil {
		return nil, err
	}
	webhooks, err := rt.Webhooks()
	if err != nil {
		return nil, err
	}
	api, err := httpapi.New(httpapi.Config{
		Desk: desk, Decider: desk.Operator, Held: rt.Store, Accounts: rt.Store, Targets: rt.Store,
		DeadLetters: queue, Media: media, Budgets: rt.Store, Webhooks: webhooks, Auth: httpapi.ContextPrincipal(), Logger: rt.Logger,
		Recurring: &publishing.Recurring{Rules: rt.Store, Desk: desk, Logger: rt.Logger},
		// The function writes no account (template.yaml grants it none).
		AccountsReadOnly: true,
	})
	if err != nil {
		return nil, err
	}
	return apigw.Handler(api, caller), nil
}

// caller makes the IAM identity API Gateway verified the request's
// principal, with every scope: on AWS, IAM decides who may call which
// route (execute-api:Invoke on the route), so a request that reaches the
// function may do what its route does.
func caller(ctx context.Context, ev events.APIGatewayV2HTTPRequest) context.Context {
	arn, id, _ := apigw.IAM(ev)
	return httpapi.WithPrincipal(ctx, httpapi.Principal{
		ID: callerScope(arn, id), Name: cmp.Or(arn, id), Scopes: []httpapi.Scope{apitoken.ScopeAll},
	})
}

// callerScope names an IAM caller for its idempotency keys (and in the
// access log): its ARN, but an assumed role's without the session name
// (arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION → …/ROLE). A session
// name changes whenever a client's credentials are renewed (the SDKs name
// sessions by the time), and a retry under new credentials must still
// find its key; the sessions of one role are one principal to IAM
// anyway. Without an ARN, the caller id.
func callerScope(arn, callerID string) string {
	if rest, ok := strings.CutPrefix(arn, "arn:"); ok {
		parts := strings.SplitN(rest, ":", 5) // partition, service, region, account, resource
		if len(parts) == 5 && parts[1] == "sts" && strings.HasPrefix(parts[4], "assumed-role/") {
			if role, _, ok := strings.Cut(strings.TrimPrefix(parts[4], "assumed-role/"), "/"); ok {
				return "arn:" + strings.Join(parts[:4], ":") + ":assumed-role/" + role
			}
		}
	}
	return cmp.Or(arn, callerID)
}
