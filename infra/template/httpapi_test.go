package template

import (
	"fmt"
	"slices"
	"strings"

	"oncepost/shared/dynamostore"
)

// apiGatewayTimeout is API Gateway's integration timeout for an HTTP API,
// in seconds (http-api-quotas: 30 s, not raisable).
const apiGatewayTimeout = 30

// checkHTTPAPI: every HTTP API authorizes every route with IAM (SAM
// wants both EnableIamAuthorizer and DefaultAuthorizer AWS_IAM), and a
// route can not opt out; each function behind one gets payload format
// 2.0 (shared/apigw reads it), a timeout under API Gateway's 30 s and
// under dynamostore.CreateStaleAfter (a request must be over before a
// retry takes its idempotency key over), and alarms on its errors (the
// generic check), throttles and duration near its timeout; the API's
// stage has an alarm on 5xx answers; its URL is an output.
func checkHTTPAPI(c *contract, t *tmpl) []string {
	w, problems := wiring(t)
	apis := resourcesOf(t, "AWS::Serverless::HttpApi")
	for _, id := range apis {
		auth := asMap(props(t, id)["Auth"])
		if auth["EnableIamAuthorizer"] != true || auth["DefaultAuthorizer"] != "AWS_IAM" {
			problems = append(problems, fmt.Sprintf("%s: Auth %s, want EnableIamAuthorizer: true and DefaultAuthorizer: AWS_IAM: every caller signs with SigV4", id, show(props(t, id)["Auth"])))
		}
		urlOutput := false
		for _, name := range sortedKeys(asMap(t.raw["Outputs"])) {
			if s, _, ok := subOf(asMap(asMap(t.raw["Outputs"])[name])["Value"]); ok && strings.HasPrefix(s, "https://${"+id+"}.execute-api.") {
				urlOutput = true
			}
		}
		if !urlOutput {
			problems = append(problems, fmt.Sprintf("%s: no output gives its URL (https://${%s}.execute-api.…)", id, id))
		}
	}
	// What the alarms watch, as namespace|metric|dimension=target.
	watchedBy := map[string]map[string]any{} // key → the alarm's properties
	for _, alarm := range resourcesOf(t, "AWS::CloudWatch::Alarm") {
		for _, m := range alarmMetrics(t, w, alarm) {
			for name, v := range m.dims {
				if refs := references(v); len(refs) == 1 {
					watchedBy[m.namespace+"|"+m.metric+"|"+name+"="+refs[0]] = props(t, alarm)
				}
			}
		}
	}
	for _, fn := range resourcesOf(t, "AWS::Serverless::Function") {
		var routes []string
		for _, name := range sortedKeys(asMap(props(t, fn)["Events"])) {
			ev := asMap(asMap(props(t, fn)["Events"])[name])
			if ev["Type"] != "HttpApi" {
				continue
			}
			p := asMap(ev["Properties"])
			routes = append(routes, name)
			if api, ok := refOf(p["ApiId"]); !ok || !slices.Contains(apis, api) {
				problems = append(problems, fmt.Sprintf("%s: event %s: ApiId %s, want a Ref to an AWS::Serverless::HttpApi of the stack (SAM's implicit API has no IAM authorization)", fn, name, show(p["ApiId"])))
			}
			if p["PayloadFormatVersion"] != "2.0" {
				problems = append(problems, fmt.Sprintf("%s: event %s: PayloadFormatVersion %s, want \"2.0\" (shared/apigw reads format 2.0 events)", fn, name, show(p["PayloadFormatVersion"])))
			}
			if a := asMap(p["Auth"]); a != nil && a["Authorizer"] != "AWS_IAM" {
				problems = append(problems, fmt.Sprintf("%s: event %s: Auth %s: a route without IAM authorization", fn, name, show(p["Auth"])))
			}
		}
		if len(routes) == 0 {
			continue
		}
		timeout, _ := number(effective(t, fn)["Timeout"])
		stale := dynamostore.CreateStaleAfter.Seconds()
		if timeout <= 0 || timeout >= apiGatewayTimeout || timeout >= stale {
			problems = append(problems, fmt.Sprintf("%s: Timeout %v s, want under API Gateway's %d s and under dynamostore.CreateStaleAfter (%v s): a request must be over before a retry takes its idempotency key over", fn, timeout, apiGatewayTimeout, stale))
		}
		if watchedBy["AWS/Lambda|Throttles|FunctionName="+fn] == nil {
			problems = append(problems, fmt.Sprintf("no alarm on AWS/Lambda Throttles FunctionName=%s: a throttled API answers 429", fn))
		}
		if d := watchedBy["AWS/Lambda|Duration|FunctionName="+fn]; d == nil {
			problems = append(problems, fmt.Sprintf("no alarm on AWS/Lambda Duration FunctionName=%s: a request near its timeout is near a 503", fn))
		} else if th, _ := number(d["Threshold"]); th < 0.5*timeout*1000 || th >= timeout*1000 || d["Statistic"] != "Maximum" {
			problems = append(problems, fmt.Sprintf("%s's Duration alarm: Statistic %s, Threshold %v ms; want the Maximum over at least half of its %v s timeout and under it", fn, show(d["Statistic"]), th, timeout))
		}
	}
	for _, api := range apis {
		if watchedBy["AWS/ApiGateway|5xx|ApiId="+api] == nil {
			problems = append(problems, fmt.Sprintf("no alarm on AWS/ApiGateway 5xx ApiId=%s: server errors on the API's stage", api))
		}
	}
	return problems
}
