package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"oncepost/shared/platform/catalog"
)

// cmdPlatforms is `oncepost platforms`: what oncepost can promise on each
// platform, from the adapters' own capabilities.
func cmdPlatforms(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("platforms")
	asJSON := fs.Bool("json", false, "print JSON")
	markdown := fs.Bool("markdown", false, "print the Markdown table the README carries")
	if _, err := parseFlags(fs, args, stdout, 0, 0); err != nil {
		return err
	}
	kinds := catalog.Kinds()
	switch {
	case *asJSON:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(kinds)
	case *markdown:
		_, err := io.WriteString(stdout, catalog.Table())
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLATFORM\tGUARANTEE\tTEXT\tMEDIA\tHANDLE")
	for _, k := range kinds {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", k.Name, k.Guarantee, k.TextLimit(), k.Capabilities.MaxMedia, k.Capabilities.Handle)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "\nexact: the platform deduplicates a repeat by our handle and Lookup reads by it; confirm by read-back: an unknown outcome is looked for before anything is re-sent; human: it cannot be read back, an operator decides (oncepost held).")
	return nil
}
