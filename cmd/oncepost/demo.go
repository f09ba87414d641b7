package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
)

const demoAccount post.AccountID = "demo"

// demoIncidentText is the demo's incident post: the platform stores it
// after the client has given up.
const demoIncidentText = "The platform answers this one only after the client has given up (the incident): watch the confirm loop find it instead of posting twice."

// demo is the running demo sandbox.
type demo struct {
	sb *sandbox.Server
}

func (d *demo) Close() error { return d.sb.Close() }

// startDemo starts a sandbox platform on 127.0.0.1 and creates the demo
// workspace the first time (an account and five posts due within the first
// minute); later runs resume it. The sandbox keeps its accounts and
// timeline in the workspace (sandbox/ next to the database), so a restart
// during a confirm wait finds the post the platform already has instead of
// a fresh, empty platform.
func startDemo(ctx context.Context, rt *runtime, out io.Writer) (*demo, error) {
	sb, err := sandbox.Open(sandbox.Options{DataDir: demoSandboxDir(rt.cfg.DBPath)})
	if err != nil {
		return nil, fmt.Errorf("open the demo sandbox: %w", err)
	}
	if err := sb.Start(); err != nil {
		sb.Close()
		return nil, fmt.Errorf("start sandbox: %w", err)
	}
	d := &demo{sb: sb}
	acc, err := rt.store.GetAccount(ctx, demoAccount)
	switch {
	case errors.Is(err, post.ErrNotFound):
		err = createDemo(ctx, rt, sb, out)
	case err == nil:
		err = resumeDemo(ctx, rt, sb, acc, out)
	}
	if err != nil {
		sb.Close()
		return nil, err
	}
	fmt.Fprintf(out, "sandbox timeline: %s/   (stats: %s/sandbox/stats)\n", sb.URL(), sb.URL())
	fmt.Fprintf(out, "status: go run ./cmd/oncepost status --db %s   stop: Ctrl-C\n\n", rt.cfg.DBPath)
	return d, nil
}

func createDemo(ctx context.Context, rt *runtime, sb *sandbox.Server, out io.Writer) error {
	sa := sb.AddAccount("demo")
	acc := post.Account{ID: demoAccount, Platform: "sandbox", Handle: "@demo", BaseURL: sb.URL(), RemoteID: sa.ID, CredentialRef: string(demoAccount), Gate: post.GateAuto}
	if err := rt.store.PutAccount(ctx, acc); err != nil {
		return err
	}
	if err := rt.store.PutCredential(ctx, acc.ID, platform.Credential{AccessToken: sa.AccessToken, RefreshToken: sa.RefreshToken}); err != nil {
		return err
	}
	img, err := demoImage(rt.cfg.MediaDir)
	if err != nil {
		return err
	}
	// Faults are consumed by creates in order; the posts are due in this order.
	sb.Script(
		sandbox.Fault{Kind: sandbox.FaultDelayBeforeCommit, Delay: rt.cfg.CallTimeout + time.Second}, // the incident
		sandbox.Fault{Kind: sandbox.Fault429, RetryAfter: 3 * time.Second},
	)
	now := time.Now().UTC().Truncate(time.Second)
	posts := []struct {
		id, body string
		media    []post.Media
	}{
		{"demo-1-incident", demoIncidentText, nil},
		{"demo-2-throttled", "This one is refused with 429 first; it is released and sent again after Retry-After.", nil},
		{"demo-3-image", "A post with an image.", []post.Media{img}},
		{"demo-4", "Good morning from oncepost.", nil},
		{"demo-5", "Five posts, each exactly once.", nil},
	}
	for i, p := range posts {
		slot := now.Add(time.Duration(10*(i+1)) * time.Second)
		pst := post.Post{ID: post.ID(p.id), Body: p.body, Media: p.media, CreatedAt: now,
			Targets: []post.Target{{Account: acc.ID, Slot: slot, Status: post.Scheduled, UpdatedAt: now}}}
		if err := rt.createPost(ctx, pst); err != nil {
			return err
		}
		fmt.Fprintf(out, "scheduled %-17s for %s\n", p.id, slot.Local().Format("15:04:05"))
	}
	fmt.Fprintf(out, "demo workspace created in %s\n", rt.cfg.DBPath)
	return nil
}

// demoSandboxDir is where the demo's sandbox keeps its state.
func demoSandboxDir(dbPath string) string { return filepath.Join(filepath.Dir(dbPath), "sandbox") }

func resumeDemo(ctx context.Context, rt *runtime, sb *sandbox.Server, acc post.Account, out io.Writer) error {
	known := false
	for _, a := range sb.Accounts() {
		known = known || a.ID == acc.RemoteID
	}
	if !known {
		// A workspace made before the sandbox kept its state: register the
		// account again; its timeline starts empty (the ledger remembers).
		cred, err := rt.store.Credential(ctx, acc.ID)
		if err != nil {
			return err
		}
		if err := sb.RestoreAccount(sandbox.Account{ID: acc.RemoteID, Username: "demo", AccessToken: cred.AccessToken, RefreshToken: cred.RefreshToken}); err != nil {
			return err
		}
	}
	// The sandbox listens on a new port each run.
	acc.BaseURL = sb.URL()
	if err := rt.store.PutAccount(ctx, acc); err != nil {
		return err
	}
	fmt.Fprintf(out, "resuming the demo workspace in %s (the sandbox's timeline is in %s)\n", rt.cfg.DBPath, demoSandboxDir(rt.cfg.DBPath))
	return nil
}

// demoImage writes a small PNG into the media directory and returns its reference.
func demoImage(dir string) (post.Media, error) {
	img := image.NewRGBA(image.Rect(0, 0, 64, 64))
	for y := 0; y < 64; y++ {
		for x := 0; x < 64; x++ {
			img.Set(x, y, color.RGBA{uint8(x * 4), uint8(y * 4), 160, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return post.Media{}, fmt.Errorf("demo image: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return post.Media{}, fmt.Errorf("demo image: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "demo.png"), buf.Bytes(), 0o600); err != nil {
		return post.Media{}, fmt.Errorf("demo image: %w", err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return post.Media{Ref: "demo.png", SHA256: hex.EncodeToString(sum[:]), ContentType: "image/png", Alt: "a colour gradient"}, nil
}
