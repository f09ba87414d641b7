package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
)

// A caller of the API on AWS signs each request with SigV4 for the
// service execute-api (docs/api-aws.md shows this example). The payload
// hash is required even for an empty body (the SHA-256 of nothing).
func Example_sigV4() {
	ctx := context.Background()
	apiURL := "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com" // the stack's ApiUrl output
	body := []byte(`{"body": "We launched.", "targets": [{"account": "news", "at": "2026-12-01T09:00:00+01:00"}]}`)

	cfg, err := config.LoadDefaultConfig(ctx) // the caller's credentials and region
	if err != nil {
		panic(err)
	}
	creds, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		panic(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, apiURL+"/v1/posts", bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", `"6f1c2a0e-3a51-4c7d-9a43-0c2a8f4f9b11"`) // new per post, the same on a retry
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "execute-api", cfg.Region, time.Now()); err != nil {
		panic(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err) // retry the same request, with the same key and body
	}
	defer res.Body.Close()
	fmt.Println(res.Status, res.Header.Get("Idempotent-Replayed"))
}
