package dynamostore

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"oncepost/shared/emulatortest"
)

// startDynalite starts a dynalite of t's own (emulatortest: a child
// process, in memory, stopped when t ends) and returns its endpoint.
func startDynalite(t *testing.T) string { return emulatortest.Dynalite(t) }

// awsConfig is an SDK configuration for the emulator at endpoint.
func awsConfig(t *testing.T, endpoint string) aws.Config { return emulatortest.AWSConfig(t, endpoint) }
