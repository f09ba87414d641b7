// Package statemachine embeds the Amazon States Language definitions that
// Step Functions runs in AWS and localflow runs on one machine, so both
// execute the same file.
package statemachine

import _ "embed"

// Confirm is confirm.asl.json: the confirm-after-timeout wait loop. It
// refers to the confirm function as ${ConfirmFunctionArn}.
//
//go:embed confirm.asl.json
var Confirm []byte
