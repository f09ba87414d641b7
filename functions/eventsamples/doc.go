// Package eventsamples holds no code: its test runs every sample event in
// events/ through its function, each built as `bootstrap` the way the
// Makefile's build targets build it and run under the Lambda Runtime
// Interface Emulator (what `sam local invoke -e events/…` does) against
// dynalite and fauxqs, and asserts what each one does to the tables, the
// queues and the platform.
package eventsamples
