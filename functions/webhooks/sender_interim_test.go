package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"oncepost/shared/publishing"
)

// testSender stands in for shared/webhook's Sender until it is merged: a
// Standard Webhooks v1 signer, no address checks.
func testSender(now func() time.Time) publishing.WebhookSender { return interimTestSender{now: now} }

type interimTestSender struct{ now func() time.Time }

func (s interimTestSender) Send(ctx context.Context, sub publishing.Subscription, d publishing.Delivery, body []byte) publishing.SendResult {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sub.Secret, "whsec_"))
	if err != nil {
		return publishing.SendResult{Err: err}
	}
	ts := strconv.FormatInt(s.now().Unix(), 10)
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.%s", d.Event.ID, ts, body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.URL, bytes.NewReader(body))
	if err != nil {
		return publishing.SendResult{Err: err}
	}
	req.Header.Set("webhook-id", d.Event.ID)
	req.Header.Set("webhook-timestamp", ts)
	req.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return publishing.SendResult{Err: err}
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return publishing.SendResult{Status: resp.StatusCode, Err: fmt.Errorf("receiver answered %d", resp.StatusCode)}
	}
	return publishing.SendResult{Status: resp.StatusCode}
}
